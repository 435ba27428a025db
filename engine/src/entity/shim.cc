// docsim's RocksDB wide-column shim: the few entity calls RocksDB's C API lacks.
//
// Built by engine/build.rs with the `cc` crate against the headers of the RocksDB that
// librocksdb-sys compiles (its manifest directory, exported as
// DEP_ROCKSDB_CARGO_MANIFEST_DIR), and linked into the same binary. The C API's wrapper
// structs are private to rocksdb/db/c.cc; the two used here are re-declared exactly as
// c.cc declares them (global namespace, one member), so a pointer the C API hands out is
// read as c.cc wrote it. Nothing here throws or allocates for the caller: results go
// through callbacks, errors through a malloc'ed message as the C API does.

#include <cstdlib>
#include <cstring>
#include <string>

#include "rocksdb/db.h"
#include "rocksdb/wide_columns.h"
#include "rocksdb/write_batch.h"

struct rocksdb_t {
  rocksdb::DB* rep;
};
struct rocksdb_writebatch_t {
  rocksdb::WriteBatch rep;
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
                                  char** errptr) {
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
                      void* ctx, char** errptr) {
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

}  // extern "C"
