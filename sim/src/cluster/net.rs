//! The replicas as madsim nodes: each node runs a receiver task (envelopes from its
//! endpoint into its peer) and a ticker task (raft-rs ticks every [`TICK`] of simulated
//! time). A node's peer lives in a shared [`Slot`] that the controller (the clients and
//! the fault schedule, on madsim's main node) also reaches, as a co-located client would;
//! what the peer has to send goes to the slot's outbox and leaves with the node's tasks.
//! Killing the node stops its tasks and unbinds its endpoint: messages in flight to it
//! are dropped, as the network drops packets to a dead host.

use docsim_engine::{Applied, Envelope, ErrorKind, OpId, Peer};
use madsim::net::Endpoint;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Raft's tick.
pub const TICK: Duration = Duration::from_millis(10);
const PORT: u16 = 7100;
const TAG: u64 = 1;

/// One replica's state, shared between its node's tasks and the controller.
#[derive(Default)]
pub struct Slot {
    /// `None` while the node is down.
    pub peer: Option<Peer>,
    /// Envelopes waiting for the node's tasks to send.
    pub outbox: Vec<Envelope>,
    /// This node's clock offset from true simulated time, in microseconds.
    pub skew_us: i64,
    /// The peer's armed power cut fired: the controller cuts the power.
    pub crashed: bool,
    /// How many times the node restarted.
    pub incarnation: u64,
    /// Entries the peer applied, not yet taken by the controller.
    pub applied: Vec<Applied>,
    /// Snapshots the peer installed (their op ids), not yet taken by the controller.
    pub installed: Vec<OpId>,
    /// Envelopes the peer could not take (raft-rs refused them), by message.
    pub refused: Vec<String>,
    /// How long each of this node's log syncs takes (a slow disk; zero: instant).
    pub sync_latency: Duration,
    /// The peer's sync count when its output last left.
    pub syncs_sent: u64,
}

impl Slot {
    /// The peer, if it runs: not down, and no armed power cut has fired in it.
    pub fn running(&mut self) -> Option<&mut Peer> {
        self.peer.as_mut().filter(|p| !p.powered_off())
    }

    /// Move what the peer applied and installed (inside any call) into the slot.
    fn gather(&mut self) {
        if let Some(peer) = self.peer.as_mut() {
            self.applied.extend(peer.take_applied());
            self.installed.extend(peer.take_installed());
        }
    }

    /// Everything applied and every snapshot installed since the last call.
    pub fn take_reports(&mut self) -> (Vec<Applied>, Vec<OpId>) {
        self.gather();
        (std::mem::take(&mut self.applied), std::mem::take(&mut self.installed))
    }
}

pub type Shared = Arc<Mutex<Slot>>;

/// The simulated time every node's physical clock derives from.
#[derive(Clone, Copy)]
pub struct World {
    pub start: madsim::time::Instant,
}

impl World {
    /// A node's physical clock: simulated time since the run began, plus its skew.
    pub fn now_us(&self, skew_us: i64) -> u64 {
        let elapsed_us = self.start.elapsed().as_micros() as i64;
        (1_000_000 + elapsed_us + skew_us).max(1) as u64
    }
}

/// The address of replica `id` (1-based).
pub fn addr(id: u64) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, id as u8)), PORT)
}

/// Create replica `id`'s madsim node; it starts serving at once (and again after every
/// `restart`).
pub fn spawn_node(id: u64, slot: Shared, world: World) -> madsim::runtime::NodeHandle {
    madsim::runtime::Handle::current()
        .create_node()
        .name(format!("n{id}"))
        .ip(addr(id).ip())
        .init(move || serve(id, slot.clone(), world))
        .build()
}

async fn serve(id: u64, slot: Shared, world: World) {
    let endpoint = Arc::new(Endpoint::bind(addr(id)).await.expect("a node binds its address"));
    madsim::task::spawn(tick(slot.clone(), world, endpoint.clone()));
    while let Ok((payload, _)) = endpoint.recv_from_raw(TAG).await {
        let envelope = *payload.downcast::<Envelope>().expect("peers send envelopes");
        let (out, hold) = with_peer(&slot, world, |peer, now_us| peer.receive(envelope, now_us));
        send(&slot, &endpoint, out, hold).await;
    }
}

async fn tick(slot: Shared, world: World, endpoint: Arc<Endpoint>) {
    loop {
        madsim::time::sleep(TICK).await;
        let (out, hold) = with_peer(&slot, world, |peer, now_us| peer.tick(now_us));
        send(&slot, &endpoint, out, hold).await;
    }
}

/// Run `f` on the slot's peer (if up); returns what is to be sent, outbox included, and
/// how long a slow disk holds it back (the node syncs before its output leaves: on a
/// slow disk, it leaves once the sync's latency has passed).
fn with_peer(
    slot: &Shared,
    world: World,
    f: impl FnOnce(&mut Peer, u64) -> docsim_engine::Result<Vec<Envelope>>,
) -> (Vec<Envelope>, Duration) {
    let mut slot = slot.lock().expect("slot lock");
    let slot = &mut *slot;
    let now_us = world.now_us(slot.skew_us);
    let Some(peer) = slot.peer.as_mut() else { return (Vec::new(), Duration::ZERO) };
    match super::cost::timed(super::cost::Part::Replicas, || f(peer, now_us)) {
        Ok(out) => slot.outbox.extend(out),
        Err(e) if e.kind() == ErrorKind::Crashed => slot.crashed = true,
        Err(_) if peer.powered_off() => {} // whoever cut it tells the controller
        Err(e) => slot.refused.push(e.to_string()),
    }
    let syncs = peer.syncs();
    slot.gather();
    let synced = syncs != slot.syncs_sent;
    slot.syncs_sent = syncs;
    let hold = if synced { slot.sync_latency } else { Duration::ZERO };
    (std::mem::take(&mut slot.outbox), hold)
}

/// Send what a peer produced, after `hold` (a slow sync); a power cut armed for after this
/// send fires once it left. docsim's modelling choice: the task that carries the output
/// waits — the receive loop takes no message, or the ticker no tick (a slow leader's
/// heartbeats wait too, where YB's timers do not wait on WAL syncs) — while the node's
/// other task and the controller's calls go on.
async fn send(slot: &Shared, endpoint: &Endpoint, out: Vec<Envelope>, hold: Duration) {
    if !hold.is_zero() {
        madsim::time::sleep(hold).await;
    }
    let fires = {
        let mut slot = slot.lock().expect("slot lock");
        slot.peer.as_mut().is_some_and(|peer| peer.crash_after_send(&out))
    };
    for envelope in out {
        let to = addr(envelope.to);
        // A send to a node that is down fails like a lost packet: Raft retries.
        let _ = endpoint.send_to_raw(to, TAG, Box::new(envelope)).await;
    }
    if fires {
        slot.lock().expect("slot lock").crashed = true;
    }
}
