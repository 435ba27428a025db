// docsim's RocksDB wide-column shim: the few entity calls RocksDB's C API lacks, and a
// block cache made with the LRU options the C API cannot set (`high_pri_pool_ratio`).
//
// Built by engine/build.rs with the `cc` crate against the headers of the RocksDB that
// librocksdb-sys compiles (its manifest directory, exported as
// DEP_ROCKSDB_CARGO_MANIFEST_DIR), and linked into the same binary. The C API's wrapper
// structs are private to rocksdb/db/c.cc; those used here are re-declared exactly as
// c.cc declares them (global namespace, one member), so a pointer the C API hands out is
// read as c.cc wrote it. Nothing here throws, and nothing is allocated for the caller
// but a cache handle (`docsim_cache_create_lru`, freed by `docsim_cache_destroy`): results
// go through callbacks, errors through a malloc'ed message as the C API does. Every entry
// point is noexcept: an exception (only std::bad_alloc can occur) terminates the process
// rather than unwind into Rust or RocksDB.

#include <cstdlib>
#include <cstring>
#include <string>

#include <memory>
#include <utility>
#include <vector>

#include "rocksdb/advanced_cache.h"
#include "rocksdb/cache.h"
#include "rocksdb/compaction_filter.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/wide_columns.h"
#include "rocksdb/write_batch.h"

struct rocksdb_t {
  rocksdb::DB* rep;
};
struct rocksdb_writebatch_t {
  rocksdb::WriteBatch rep;
};
struct rocksdb_options_t {
  rocksdb::Options rep;
};
struct rocksdb_iterator_t {
  rocksdb::Iterator* rep;
};
struct rocksdb_table_properties_t {
  rocksdb::TableProperties rep;
};

// What a compaction filter written in Rust answers through (entity.rs mirrors it).
struct docsim_filter_callbacks {
  // A filter for one compaction: its state.
  void* (*create)(void* factory, int full, int manual);
  void (*destroy)(void* filter);
  void (*destroy_factory)(void* factory);
  // One entry: a plain value is one column with the empty name (`entity` 0). Returns 0
  // keep, 1 remove, 2 change to the value set, 3 change to the columns added (`out`).
  int (*filter)(void* filter, int level, const char* key, size_t key_len, int entity,
                size_t n, const char* const* names, const size_t* name_lens,
                const char* const* values, const size_t* value_lens, void* out);
};

// What a table-properties collector written in Rust answers through (entity/props.rs
// mirrors it): one collector per SST file RocksDB builds, shown every user key, and asked
// for its property's bytes at the end (written through `docsim_property_set`).
struct docsim_collector_callbacks {
  void* (*create)(void* factory);
  void (*destroy)(void* collector);
  void (*destroy_factory)(void* factory);
  void (*add)(void* collector, const char* key, size_t key_len);
  void (*finish)(void* collector, void* out);
};

// Where a filter's new value or columns go.
struct docsim_filter_out {
  std::string* value;
  std::vector<std::pair<std::string, std::string>>* columns;
};

namespace {

// Report `s` through `errptr` as the C API does (a malloc'ed copy); true if it failed.
bool failed(const rocksdb::Status& s, char** errptr) {
  if (s.ok()) {
    return false;
  }
  const std::string message = s.ToString();
  char* copy = static_cast<char*>(std::malloc(message.size() + 1));
  if (copy != nullptr) {
    std::memcpy(copy, message.c_str(), message.size() + 1);
  }
  *errptr = copy;
  return true;
}

}  // namespace

extern "C" {

// Put an entity of `n` columns (names and values as pointer/length pairs) at `key` into
// `batch`, for `db`'s default column family. Column names must be distinct.
void docsim_writebatch_put_entity(rocksdb_t* db, rocksdb_writebatch_t* batch,
                                  const char* key, size_t key_len, size_t n,
                                  const char* const* names, const size_t* name_lens,
                                  const char* const* values, const size_t* value_lens,
                                  char** errptr) noexcept {
  rocksdb::WideColumns columns;
  columns.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    columns.emplace_back(rocksdb::Slice(names[i], name_lens[i]),
                         rocksdb::Slice(values[i], value_lens[i]));
  }
  rocksdb::ColumnFamilyHandle* cf = db->rep->DefaultColumnFamily();
  failed(batch->rep.PutEntity(cf, rocksdb::Slice(key, key_len), columns), errptr);
}

// Read the entity (or plain value: one column with the empty name) at `key` from `db`'s
// default column family, calling `column` once per column in name order. Returns 1 if
// the key exists, 0 if not (or on error, with `errptr` set).
int docsim_get_entity(rocksdb_t* db, const char* key, size_t key_len,
                      void (*column)(void* ctx, const char* name, size_t name_len,
                                     const char* value, size_t value_len),
                      void* ctx, char** errptr) noexcept {
  rocksdb::PinnableWideColumns found;
  rocksdb::Status s = db->rep->GetEntity(rocksdb::ReadOptions(), db->rep->DefaultColumnFamily(),
                                         rocksdb::Slice(key, key_len), &found);
  if (s.IsNotFound()) {
    return 0;
  }
  if (failed(s, errptr)) {
    return 0;
  }
  for (const rocksdb::WideColumn& c : found.columns()) {
    column(ctx, c.name().data(), c.name().size(), c.value().data(), c.value().size());
  }
  return 1;
}

// The columns of the entry `it` is at (valid): an entity's, in name order, or a plain
// value as one column with the empty name; `column` is called once per column, with
// bytes valid until the iterator moves.
void docsim_iter_columns(const rocksdb_iterator_t* it,
                         void (*column)(void* ctx, const char* name, size_t name_len,
                                        const char* value, size_t value_len),
                         void* ctx) noexcept {
  for (const rocksdb::WideColumn& c : it->rep->columns()) {
    column(ctx, c.name().data(), c.name().size(), c.value().data(), c.value().size());
  }
}

// The new plain value of the entry being filtered.
void docsim_filter_set_value(void* out, const char* value, size_t len) noexcept {
  static_cast<docsim_filter_out*>(out)->value->assign(value, len);
}

// One more column of the entry's new entity (RocksDB sorts them).
void docsim_filter_add_column(void* out, const char* name, size_t name_len,
                              const char* value, size_t value_len) noexcept {
  static_cast<docsim_filter_out*>(out)->columns->emplace_back(std::string(name, name_len),
                                                               std::string(value, value_len));
}

}  // extern "C"

namespace {

// A FilterV3 filter: shown plain values and entities alike (RocksDB's default FilterV3
// keeps every entity unseen, so a C API filter never sees one).
class Filter : public rocksdb::CompactionFilter {
 public:
  Filter(const docsim_filter_callbacks& cb, void* state) : cb_(cb), state_(state) {}
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;
  ~Filter() override { cb_.destroy(state_); }

  Decision FilterV3(int level, const rocksdb::Slice& key, ValueType type,
                    const rocksdb::Slice* value, const rocksdb::WideColumns* columns,
                    std::string* new_value,
                    std::vector<std::pair<std::string, std::string>>* new_columns,
                    std::string* /*skip_until*/) const noexcept override {
    std::vector<const char*> names, values;
    std::vector<size_t> name_lens, value_lens;
    if (type == ValueType::kValue) {
      names.push_back("");
      name_lens.push_back(0);
      values.push_back(value->data());
      value_lens.push_back(value->size());
    } else if (type == ValueType::kWideColumnEntity) {
      for (const rocksdb::WideColumn& c : *columns) {
        names.push_back(c.name().data());
        name_lens.push_back(c.name().size());
        values.push_back(c.value().data());
        value_lens.push_back(c.value().size());
      }
    } else {
      return Decision::kKeep;  // merge operands and blob indexes: none in docsim
    }
    docsim_filter_out out{new_value, new_columns};
    int entity = type == ValueType::kWideColumnEntity ? 1 : 0;
    switch (cb_.filter(state_, level, key.data(), key.size(), entity, names.size(),
                       names.data(), name_lens.data(), values.data(), value_lens.data(),
                       &out)) {
      case 1:
        return Decision::kRemove;
      case 2:
        return Decision::kChangeValue;
      case 3:
        return Decision::kChangeWideColumnEntity;
      default:
        return Decision::kKeep;
    }
  }

  const char* Name() const override { return "docsim_gc_v3"; }

 private:
  docsim_filter_callbacks cb_;
  void* state_;
};

class Factory : public rocksdb::CompactionFilterFactory {
 public:
  Factory(const docsim_filter_callbacks& cb, void* state) : cb_(cb), state_(state) {}
  Factory(const Factory&) = delete;
  Factory& operator=(const Factory&) = delete;
  ~Factory() override { cb_.destroy_factory(state_); }

  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) noexcept override {
    void* filter = cb_.create(state_, context.is_full_compaction ? 1 : 0,
                              context.is_manual_compaction ? 1 : 0);
    return std::make_unique<Filter>(cb_, filter);
  }

  const char* Name() const override { return "docsim_gc_v3_factory"; }

 private:
  docsim_filter_callbacks cb_;
  void* state_;
};

}  // namespace

extern "C" {

// Install a compaction filter factory whose filters answer through `cb` (replacing any
// factory set before: install it last).
void docsim_options_set_filter_factory(rocksdb_options_t* opts,
                                       const docsim_filter_callbacks* cb, void* state) noexcept {
  opts->rep.compaction_filter_factory = std::make_shared<Factory>(*cb, state);
}

}  // extern "C"

namespace {

// A collector: every user key of the file (puts, deletions, entities alike) to Rust, and
// one user-collected property `name` from it at the end.
class Collector : public rocksdb::TablePropertiesCollector {
 public:
  Collector(const docsim_collector_callbacks& cb, void* state, const std::string& name)
      : cb_(cb), state_(state), name_(name) {}
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  ~Collector() override { cb_.destroy(state_); }

  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& /*value*/,
                             rocksdb::EntryType type, rocksdb::SequenceNumber /*seq*/,
                             uint64_t /*file_size*/) noexcept override {
    // A range deletion covers more than its start key: shown as an empty key, which
    // bounds nothing (docsim writes none; this keeps the property honest if it did).
    if (type == rocksdb::kEntryRangeDeletion) {
      cb_.add(state_, "", 0);
      return rocksdb::Status::OK();
    }
    cb_.add(state_, key.data(), key.size());
    return rocksdb::Status::OK();
  }

  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) noexcept override {
    std::string value;
    cb_.finish(state_, &value);
    (*properties)[name_] = std::move(value);
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override { return {}; }

  const char* Name() const override { return "docsim_collector"; }

 private:
  docsim_collector_callbacks cb_;
  void* state_;
  std::string name_;
};

class CollectorFactory : public rocksdb::TablePropertiesCollectorFactory {
 public:
  CollectorFactory(const docsim_collector_callbacks& cb, void* state, const char* name)
      : cb_(cb), state_(state), name_(name) {}
  CollectorFactory(const CollectorFactory&) = delete;
  CollectorFactory& operator=(const CollectorFactory&) = delete;
  ~CollectorFactory() override { cb_.destroy_factory(state_); }

  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context /*context*/) noexcept override {
    return new Collector(cb_, cb_.create(state_), name_);
  }

  const char* Name() const override { return "docsim_collector_factory"; }

 private:
  docsim_collector_callbacks cb_;
  void* state_;
  std::string name_;
};

}  // namespace

extern "C" {

// Add a table-properties collector factory whose collectors answer through `cb` and
// write the user-collected property `name` (copied).
void docsim_options_add_collector(rocksdb_options_t* opts, const docsim_collector_callbacks* cb,
                                  void* state, const char* name) noexcept {
  opts->rep.table_properties_collector_factories.emplace_back(
      std::make_shared<CollectorFactory>(*cb, state, name));
}

// The collector's property value (copied).
void docsim_property_set(void* out, const char* value, size_t len) noexcept {
  static_cast<std::string*>(out)->assign(value, len);
}

// The user-collected property `name` of a file's table properties: its bytes (valid while
// `props` is), or null when the file has none.
const char* docsim_table_property(const rocksdb_table_properties_t* props, const char* name,
                                  size_t* len) noexcept {
  const auto& user = props->rep.user_collected_properties;
  auto found = user.find(name);
  if (found == user.end()) {
    return nullptr;
  }
  *len = found->second.size();
  return found->second.data();
}

}  // extern "C"

// A block cache the shim made, owned by a Rust handle (entity/cache.rs); options it is
// installed in hold references of their own, so the handle may go first.
struct docsim_cache {
  std::shared_ptr<rocksdb::Cache> rep;
};

extern "C" {

// A new LRU cache of `capacity` bytes keeping `high_pri_pool_ratio` of it for blocks hit
// again (0: no high-priority pool, no midpoint insertion). Everything else is what the C
// API's `rocksdb_cache_create_lru` gives (`NewLRUCache(capacity)`: shards chosen by the
// capacity, no strict limit, no low-priority pool, the default allocator, mutex and
// metadata charge). Null on error, with `errptr` set.
docsim_cache* docsim_cache_create_lru(size_t capacity, double high_pri_pool_ratio,
                                      char** errptr) noexcept {
  if (!(high_pri_pool_ratio >= 0.0 && high_pri_pool_ratio <= 1.0)) {
    failed(rocksdb::Status::InvalidArgument("high_pri_pool_ratio must be within [0, 1]"),
           errptr);
    return nullptr;
  }
  const rocksdb::LRUCacheOptions options(capacity, -1, false, high_pri_pool_ratio);
  std::shared_ptr<rocksdb::Cache> cache = options.MakeSharedCache();
  if (cache == nullptr) {
    failed(rocksdb::Status::InvalidArgument("RocksDB refused the LRU cache options"), errptr);
    return nullptr;
  }
  return new docsim_cache{std::move(cache)};
}

void docsim_cache_destroy(docsim_cache* cache) noexcept { delete cache; }

// The bytes the cache holds, and its capacity.
size_t docsim_cache_usage(const docsim_cache* cache) noexcept { return cache->rep->GetUsage(); }

size_t docsim_cache_capacity(const docsim_cache* cache) noexcept {
  return cache->rep->GetCapacity();
}

// Make `cache` the block cache of `opts`' block-based table factory: the factory is
// replaced by a new one with the same table options but this cache (and a block cache on,
// `no_block_cache` false), so RocksDB's constructor sets up what depends on the cache. Set
// the table factory first, this after. An error if the factory is not block-based.
void docsim_options_set_block_cache(rocksdb_options_t* opts, const docsim_cache* cache,
                                    char** errptr) noexcept {
  const std::shared_ptr<rocksdb::TableFactory>& factory = opts->rep.table_factory;
  const rocksdb::BlockBasedTableOptions* table =
      factory == nullptr ? nullptr : factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  if (table == nullptr) {
    failed(rocksdb::Status::InvalidArgument("the options' table factory is not block-based"),
           errptr);
    return;
  }
  rocksdb::BlockBasedTableOptions with_cache = *table;
  with_cache.no_block_cache = false;
  with_cache.block_cache = cache->rep;
  opts->rep.table_factory.reset(rocksdb::NewBlockBasedTableFactory(with_cache));
}

}  // extern "C"

extern "C" {

// The entries of each live SST file of `db`, from its table properties (RocksDB's live
// file list counts a file's entries only once it has loaded them, which a reopened
// database does lazily): `each` gets the file's name (RocksDB's path) and its count.
void docsim_live_file_entries(rocksdb_t* db,
                              void (*each)(void* ctx, const char* name, size_t len,
                                           uint64_t entries),
                              void* ctx, char** errptr) noexcept {
  rocksdb::TablePropertiesCollection props;
  if (failed(db->rep->GetPropertiesOfAllTables(&props), errptr)) {
    return;
  }
  for (const auto& [name, table] : props) {
    each(ctx, name.data(), name.size(), table->num_entries);
  }
}

}  // extern "C"
