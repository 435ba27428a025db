//! The HTML report, opened in headless Chromium, renders its charts: a screenshot is taken
//! and its pixels must show the bars of each chart in their colors. Needs `chromium`
//! (Debian's package; `.ci/run` installs it): without it the test fails, saying so.

use docsim_reports::{to_html, CampaignReport, FailureReport, RunReport};
use std::path::Path;
use std::process::Command;

fn report() -> CampaignReport {
    let runs = (0..30)
        .map(|seed| RunReport {
            seed,
            ops: 1000 + seed as usize * 50,
            seconds: 0.1,
            probes: [
                ("gc.dropped".to_string(), seed * 3),
                ("write.required_marker".to_string(), 7),
            ]
            .into(),
            failure: (seed == 7)
                .then(|| FailureReport { kind: "Get".into(), ..Default::default() }),
            ..Default::default()
        })
        .collect();
    CampaignReport {
        commit: "test".into(),
        known_probes: vec!["gc.dropped".into(), "write.required_marker".into()],
        runs,
        ..Default::default()
    }
}

/// Pixels of exactly `rgb` in the screenshot.
fn count(pixels: &[u8], channels: usize, rgb: [u8; 3]) -> usize {
    pixels.chunks(channels).filter(|p| p[..3] == rgb).count()
}

#[test]
fn html_report_renders_its_charts_in_headless_chromium() {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        chromium.exists(),
        "/usr/bin/chromium is missing: .ci/run installs it (apt-get install chromium)"
    );
    let dir = std::env::temp_dir().join(format!("docsim-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let html = dir.join("campaign.html");
    std::fs::write(&html, to_html(&report())).expect("write html");
    let shot = dir.join("shot.png");
    let status = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--hide-scrollbars")
        .arg("--window-size=900,2200")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(status.status.success(), "chromium: {}", String::from_utf8_lossy(&status.stderr));
    let decoder =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).expect("png")));
    let mut reader = decoder.read_info().expect("png header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut pixels).expect("png frame");
    let channels = info.color_type.samples();
    assert!(info.width >= 800 && info.height >= 2000);
    // Each chart's bars, in their own colors: ops/s (blue), failures (red), probes (orange).
    for (chart, rgb) in [
        ("ops/s", [0x4a, 0x7b, 0xd0]),
        ("failures", [0xc0, 0x50, 0x4d]),
        ("probes", [0xf7, 0x96, 0x46]),
    ] {
        let n = count(&pixels[..info.buffer_size()], channels, rgb);
        assert!(n > 500, "the {chart} chart shows no bars ({n} pixels)");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
