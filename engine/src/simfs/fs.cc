// docsim's RocksDB file system: every file RocksDB opens lives on the simulated disk of
// engine/src/disk.rs, reached through callbacks into Rust (engine/src/simfs.rs mirrors
// `docsim_fs_callbacks`). The file system only translates: RocksDB's FileSystem calls
// become disk operations on a path, the disk's answer becomes an IOStatus. What a disk
// does with a write, a sync, a rename or a power cut is decided in Rust, in one place,
// with one fault ledger and one seeded stream. Beside it: the Env that carries it (with
// a clock of its own that only sleeping moves), and the two calls that make RocksDB's work finish before
// the caller goes on (a manual compaction with its status, waiting for background jobs).
//
// Calls arrive on RocksDB's own threads (flushes, compactions) as well as the caller's;
// the Rust side locks its disk and never touches the simulator's context. Built by
// engine/build.rs beside the wide-column shim, against the same RocksDB headers; RocksDB
// itself is not recompiled. Nothing here throws into RocksDB: every entry point that
// Rust calls is noexcept.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/options.h"
#include "rocksdb/system_clock.h"

struct rocksdb_options_t {
  rocksdb::Options rep;
};
struct rocksdb_t {
  rocksdb::DB* rep;
};

// What the Rust disk answers through. Every call names a path as RocksDB gave it
// (NUL-terminated) and returns a status code: 0 ok, 1 not found, 2 an I/O error, 3 no
// space; on an error the message goes to `msg` (a std::string*, via docsim_fs_message).
struct docsim_fs_callbacks {
  void* ctx;
  int (*create)(void* ctx, const char* path, void* msg);
  int (*append)(void* ctx, const char* path, const char* data, size_t n, void* msg);
  int (*sync)(void* ctx, const char* path, void* msg);
  int (*read)(void* ctx, const char* path, uint64_t offset, char* buf, size_t n,
              size_t* got, void* msg);
  int (*size)(void* ctx, const char* path, uint64_t* size, void* msg);
  int (*remove)(void* ctx, const char* path, void* msg);
  int (*rename)(void* ctx, const char* from, const char* to, void* msg);
  int (*link)(void* ctx, const char* from, const char* to, void* msg);
  int (*truncate)(void* ctx, const char* path, uint64_t size, void* msg);
  // 0 nothing there, 1 a file, 2 a directory.
  int (*kind)(void* ctx, const char* path);
  // Each entry of the directory through docsim_fs_push (names, not paths).
  int (*children)(void* ctx, const char* path, void* out, void* msg);
  int (*make_dir)(void* ctx, const char* path, void* msg);
  int (*remove_dir)(void* ctx, const char* path, void* msg);
  int (*sync_dir)(void* ctx, const char* path, void* msg);
};

extern "C" void docsim_fs_message(void* msg, const char* text, size_t len) noexcept {
  static_cast<std::string*>(msg)->assign(text, len);
}

extern "C" void docsim_fs_push(void* out, const char* name, size_t len) noexcept {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name, len);
}

namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

IOStatus status(int code, const std::string& msg) {
  switch (code) {
    case 0:
      return IOStatus::OK();
    case 1:
      return IOStatus::PathNotFound(msg);
    case 3:
      return IOStatus::NoSpace(msg);
    default:
      return IOStatus::IOError(msg);
  }
}

// One file's name on the disk, and the disk.
class Handle {
 public:
  Handle(const docsim_fs_callbacks* cb, std::string path) : cb_(cb), path_(std::move(path)) {}

 protected:
  const docsim_fs_callbacks* cb_;
  std::string path_;
};

class SimWritableFile : public rocksdb::FSWritableFile, Handle {
 public:
  SimWritableFile(const docsim_fs_callbacks* cb, std::string path, uint64_t size)
      : Handle(cb, std::move(path)), size_(size) {}

  IOStatus Append(const rocksdb::Slice& data, const IOOptions&, IODebugContext*) override {
    std::string msg;
    int code = cb_->append(cb_->ctx, path_.c_str(), data.data(), data.size(), &msg);
    if (code == 0) {
      size_ += data.size();
    }
    return status(code, msg);
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o,
                  const rocksdb::DataVerificationInfo&, IODebugContext* dbg) override {
    return Append(data, o, dbg);
  }
  IOStatus Truncate(uint64_t size, const IOOptions&, IODebugContext*) override {
    std::string msg;
    int code = cb_->truncate(cb_->ctx, path_.c_str(), size, &msg);
    if (code == 0) {
      size_ = size;
    }
    return status(code, msg);
  }
  IOStatus Close(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Flush(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Sync(const IOOptions&, IODebugContext*) override {
    std::string msg;
    return status(cb_->sync(cb_->ctx, path_.c_str(), &msg), msg);
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override { return Sync(o, dbg); }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }

 private:
  uint64_t size_;
};

class SimRandomAccessFile : public rocksdb::FSRandomAccessFile, Handle {
 public:
  using Handle::Handle;
  IOStatus Read(uint64_t offset, size_t n, const IOOptions&, rocksdb::Slice* result,
                char* scratch, IODebugContext*) const override {
    std::string msg;
    size_t got = 0;
    int code = cb_->read(cb_->ctx, path_.c_str(), offset, scratch, n, &got, &msg);
    *result = rocksdb::Slice(scratch, code == 0 ? got : 0);
    return status(code, msg);
  }
};

class SimSequentialFile : public rocksdb::FSSequentialFile, Handle {
 public:
  using Handle::Handle;
  IOStatus Read(size_t n, const IOOptions&, rocksdb::Slice* result, char* scratch,
                IODebugContext*) override {
    std::string msg;
    size_t got = 0;
    int code = cb_->read(cb_->ctx, path_.c_str(), at_, scratch, n, &got, &msg);
    *result = rocksdb::Slice(scratch, code == 0 ? got : 0);
    at_ += result->size();
    return status(code, msg);
  }
  IOStatus Skip(uint64_t n) override {
    at_ += n;
    return IOStatus::OK();
  }

 private:
  uint64_t at_ = 0;
};

class SimDirectory : public rocksdb::FSDirectory, Handle {
 public:
  using Handle::Handle;
  IOStatus Fsync(const IOOptions&, IODebugContext*) override {
    std::string msg;
    return status(cb_->sync_dir(cb_->ctx, path_.c_str(), &msg), msg);
  }
  IOStatus Close(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
};

class SimLock : public rocksdb::FileLock {};

// RocksDB's info log goes nowhere: its lines carry real times and thread ids, which must
// not reach a disk whose contents a trace may show.
class NoLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

class SimFileSystem : public rocksdb::FileSystem {
 public:
  explicit SimFileSystem(docsim_fs_callbacks cb) : cb_(cb) {}
  const char* Name() const override { return "DocsimSimDiskFileSystem"; }

  IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions&,
                             std::unique_ptr<rocksdb::FSSequentialFile>* r,
                             IODebugContext*) override {
    IOStatus s = MustBeFile(f);
    if (s.ok()) r->reset(new SimSequentialFile(&cb_, f));
    return s;
  }
  IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions&,
                               std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                               IODebugContext*) override {
    IOStatus s = MustBeFile(f);
    if (s.ok()) r->reset(new SimRandomAccessFile(&cb_, f));
    return s;
  }
  IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions&,
                           std::unique_ptr<rocksdb::FSWritableFile>* r,
                           IODebugContext*) override {
    std::string msg;
    IOStatus s = status(cb_.create(cb_.ctx, f.c_str(), &msg), msg);
    if (s.ok()) r->reset(new SimWritableFile(&cb_, f, 0));
    return s;
  }
  IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                              std::unique_ptr<rocksdb::FSWritableFile>* r,
                              IODebugContext* dbg) override {
    uint64_t size = 0;
    if (cb_.kind(cb_.ctx, f.c_str()) == 0) return NewWritableFile(f, o, r, dbg);
    IOStatus s = GetFileSize(f, IOOptions(), &size, dbg);
    if (s.ok()) r->reset(new SimWritableFile(&cb_, f, size));
    return s;
  }
  IOStatus NewDirectory(const std::string& d, const IOOptions&,
                        std::unique_ptr<rocksdb::FSDirectory>* r, IODebugContext*) override {
    if (cb_.kind(cb_.ctx, d.c_str()) != 2) return IOStatus::PathNotFound(d);
    r->reset(new SimDirectory(&cb_, d));
    return IOStatus::OK();
  }
  IOStatus FileExists(const std::string& f, const IOOptions&, IODebugContext*) override {
    return cb_.kind(cb_.ctx, f.c_str()) == 0 ? IOStatus::NotFound(f) : IOStatus::OK();
  }
  IOStatus GetChildren(const std::string& d, const IOOptions&, std::vector<std::string>* r,
                       IODebugContext*) override {
    std::string msg;
    r->clear();
    return status(cb_.children(cb_.ctx, d.c_str(), r, &msg), msg);
  }
  IOStatus DeleteFile(const std::string& f, const IOOptions&, IODebugContext*) override {
    std::string msg;
    return status(cb_.remove(cb_.ctx, f.c_str(), &msg), msg);
  }
  IOStatus Truncate(const std::string& f, size_t size, const IOOptions&,
                    IODebugContext*) override {
    std::string msg;
    return status(cb_.truncate(cb_.ctx, f.c_str(), size, &msg), msg);
  }
  IOStatus CreateDir(const std::string& d, const IOOptions&, IODebugContext*) override {
    if (cb_.kind(cb_.ctx, d.c_str()) != 0) return IOStatus::IOError(d + ": exists");
    std::string msg;
    return status(cb_.make_dir(cb_.ctx, d.c_str(), &msg), msg);
  }
  IOStatus CreateDirIfMissing(const std::string& d, const IOOptions&,
                              IODebugContext*) override {
    int kind = cb_.kind(cb_.ctx, d.c_str());
    if (kind == 2) return IOStatus::OK();
    if (kind == 1) return IOStatus::IOError(d + ": a file, not a directory");
    std::string msg;
    return status(cb_.make_dir(cb_.ctx, d.c_str(), &msg), msg);
  }
  IOStatus DeleteDir(const std::string& d, const IOOptions&, IODebugContext*) override {
    std::string msg;
    return status(cb_.remove_dir(cb_.ctx, d.c_str(), &msg), msg);
  }
  IOStatus GetFileSize(const std::string& f, const IOOptions&, uint64_t* size,
                       IODebugContext*) override {
    std::string msg;
    return status(cb_.size(cb_.ctx, f.c_str(), size, &msg), msg);
  }
  IOStatus GetFileModificationTime(const std::string& f, const IOOptions&, uint64_t* t,
                                   IODebugContext*) override {
    *t = 0;  // no clock on the simulated disk
    return MustBeFile(f);
  }
  IOStatus RenameFile(const std::string& from, const std::string& to, const IOOptions&,
                      IODebugContext*) override {
    std::string msg;
    return status(cb_.rename(cb_.ctx, from.c_str(), to.c_str(), &msg), msg);
  }
  IOStatus LinkFile(const std::string& from, const std::string& to, const IOOptions&,
                    IODebugContext*) override {
    std::string msg;
    return status(cb_.link(cb_.ctx, from.c_str(), to.c_str(), &msg), msg);
  }
  // One process, one opener per tablet directory (the node's): the lock is a token.
  IOStatus LockFile(const std::string&, const IOOptions&, rocksdb::FileLock** lock,
                    IODebugContext*) override {
    *lock = new SimLock();
    return IOStatus::OK();
  }
  IOStatus UnlockFile(rocksdb::FileLock* lock, const IOOptions&, IODebugContext*) override {
    delete lock;
    return IOStatus::OK();
  }
  IOStatus GetTestDirectory(const IOOptions&, std::string* path, IODebugContext*) override {
    *path = "/docsim-test";
    return IOStatus::OK();
  }
  IOStatus NewLogger(const std::string&, const IOOptions&, std::shared_ptr<rocksdb::Logger>* r,
                     IODebugContext*) override {
    *r = std::make_shared<NoLogger>();
    return IOStatus::OK();
  }
  IOStatus GetAbsolutePath(const std::string& path, const IOOptions&, std::string* out,
                           IODebugContext*) override {
    *out = path;
    return IOStatus::OK();
  }
  IOStatus IsDirectory(const std::string& path, const IOOptions&, bool* is_dir,
                       IODebugContext*) override {
    int kind = cb_.kind(cb_.ctx, path.c_str());
    *is_dir = kind == 2;
    return kind == 0 ? IOStatus::PathNotFound(path) : IOStatus::OK();
  }

 private:
  IOStatus MustBeFile(const std::string& f) {
    return cb_.kind(cb_.ctx, f.c_str()) == 1 ? IOStatus::OK() : IOStatus::PathNotFound(f);
  }
  docsim_fs_callbacks cb_;
};

// RocksDB's clock on the simulated disk: a counter that only sleeping moves. RocksDB
// sleeps a second of real time after a failed background flush or compaction
// (`BackgroundCallFlush`, `BackgroundCallCompaction`: "in case this is an environmental
// problem") before it signals the job's end, and closing the database waits for it; a
// simulated disk's fault is no problem that time fixes, and docsim recovers by
// reopening. And the times RocksDB writes into its files (an SST file's creation time in
// its properties block) are this counter's, not the wall clock's: the same in every run,
// so a damaged block's checksum in an error message is too. A sleep moves the counter by
// its length, so a loop that waits for time to pass (a write delay) still ends.
class CounterClock : public rocksdb::SystemClockWrapper {
 public:
  explicit CounterClock(const std::shared_ptr<rocksdb::SystemClock>& target)
      : SystemClockWrapper(target) {}
  const char* Name() const override { return "DocsimCounterClock"; }
  uint64_t NowMicros() override { return now_us_.load(); }
  uint64_t NowNanos() override { return now_us_.load() * 1000; }
  void SleepForMicroseconds(int micros) override {
    now_us_.fetch_add(micros > 0 ? static_cast<uint64_t>(micros) : 0);
  }
  rocksdb::Status GetCurrentTime(int64_t* unix_time) override {
    *unix_time = static_cast<int64_t>(now_us_.load() / 1000000);
    return rocksdb::Status::OK();
  }

 private:
  // 2020-01-01 in microseconds: a plausible time, never the wall clock's.
  std::atomic<uint64_t> now_us_{1577836800ull * 1000000};
};

// The default Env (its threads) with docsim's file system and the clock above (the Env's
// own time calls too).
class SimEnv : public rocksdb::EnvWrapper {
 public:
  explicit SimEnv(const std::shared_ptr<rocksdb::FileSystem>& fs)
      : EnvWrapper(rocksdb::NewCompositeEnv(fs)) {
    file_system_ = fs;
    system_clock_ = std::make_shared<CounterClock>(rocksdb::SystemClock::Default());
  }
  const char* Name() const override { return "DocsimSimEnv"; }
  void SleepForMicroseconds(int micros) override { system_clock_->SleepForMicroseconds(micros); }
  uint64_t NowMicros() override { return system_clock_->NowMicros(); }
  uint64_t NowNanos() override { return system_clock_->NowNanos(); }
  rocksdb::Status GetCurrentTime(int64_t* unix_time) override {
    return system_clock_->GetCurrentTime(unix_time);
  }
};

}  // namespace

extern "C" {

// An Env whose files live on the simulated disk behind `cb` (its threads are RocksDB's
// default ones). Freed by docsim_sim_env_destroy, after every DB using it.
void* docsim_sim_env_create(const docsim_fs_callbacks* cb) noexcept {
  auto fs = std::make_shared<SimFileSystem>(*cb);
  return static_cast<rocksdb::Env*>(new SimEnv(fs));
}

void docsim_sim_env_destroy(void* env) noexcept { delete static_cast<rocksdb::Env*>(env); }

// Open through `env`, and log nothing (see NoLogger). After a background error
// RocksDB never resumes by itself (its recovery thread waits in real time): the tablet
// stops, and reopening it recovers.
void docsim_options_set_sim_env(rocksdb_options_t* opts, void* env) noexcept {
  opts->rep.env = static_cast<rocksdb::Env*>(env);
  opts->rep.info_log = std::make_shared<NoLogger>();
  opts->rep.max_bgerror_resume_count = 0;
}

// A manual compaction of every file of `db` into the bottommost level, exclusive of
// other manual compactions, with its status (the C API's drops it).
void docsim_compact_all(rocksdb_t* db, char** errptr) noexcept {
  rocksdb::CompactRangeOptions options;
  options.exclusive_manual_compaction = true;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  rocksdb::Status s = db->rep->CompactRange(options, nullptr, nullptr);
  if (!s.ok()) {
    *errptr = strdup(s.ToString().c_str());
  }
}

// Wait until `db` has no flush, compaction or file deletion running or scheduled (a
// manual flush or compaction returns before its obsolete files are deleted). After a
// background error WaitForCompact returns at once, while the failed job may still be
// deleting its partial files: pausing background work waits for every running job to
// end, whatever the error. The background error, if any, goes to `errptr`.
void docsim_wait_for_background(rocksdb_t* db, char** errptr) noexcept {
  rocksdb::WaitForCompactOptions options;
  options.wait_for_purge = true;
  rocksdb::Status s = db->rep->WaitForCompact(options);
  if (!s.ok()) {
    db->rep->PauseBackgroundWork().PermitUncheckedError();
    db->rep->ContinueBackgroundWork().PermitUncheckedError();
    *errptr = strdup(s.ToString().c_str());
  }
}

}  // extern "C"
