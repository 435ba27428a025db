//! Builds the RocksDB wide-column shim (`src/entity/shim.cc`) and docsim's RocksDB file
//! system on the simulated disk (`src/simfs/fs.cc`) against the headers of the
//! RocksDB that librocksdb-sys compiles: it exports its manifest directory
//! (`DEP_ROCKSDB_CARGO_MANIFEST_DIR`), under which `rocksdb/include` is. Only the shim is
//! compiled here, never RocksDB itself, with the C++ standard librocksdb-sys builds it
//! with (C++20; RTTI on, as there: librocksdb-sys passes no `-fno-rtti`). A system RocksDB
//! (`ROCKSDB_LIB_DIR`) is refused: its classes need not match these headers.

fn main() {
    println!("cargo:rerun-if-env-changed=ROCKSDB_LIB_DIR");
    if std::env::var_os("ROCKSDB_LIB_DIR").is_some() {
        panic!("the wide-column shim needs the RocksDB librocksdb-sys builds, not ROCKSDB_LIB_DIR");
    }
    let rocksdb = std::env::var("DEP_ROCKSDB_CARGO_MANIFEST_DIR")
        .expect("librocksdb-sys exports its manifest directory (links = \"rocksdb\")");
    let include = std::path::Path::new(&rocksdb).join("rocksdb").join("include");
    println!("cargo:rerun-if-changed=src/entity/shim.cc");
    println!("cargo:rerun-if-changed=src/simfs/fs.cc");
    cc::Build::new()
        .cpp(true)
        .file("src/entity/shim.cc")
        .file("src/simfs/fs.cc")
        .include(include)
        .flag("-std=c++20")
        .flag("-include")
        .flag("cstdint")
        .define("NDEBUG", "1")
        .warnings(false)
        .compile("docsim_entity_shim");
}
