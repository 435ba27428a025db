//! Builds the RocksDB wide-column shim (`src/entity/shim.cc`) against the headers of the
//! RocksDB that librocksdb-sys compiles: it exports its manifest directory
//! (`DEP_ROCKSDB_CARGO_MANIFEST_DIR`), under which `rocksdb/include` is. Only the shim is
//! compiled here, never RocksDB itself. `-fno-rtti`: the shim needs no type information
//! (it only calls into RocksDB), so it asks for none of RocksDB's.

fn main() {
    let rocksdb = std::env::var("DEP_ROCKSDB_CARGO_MANIFEST_DIR")
        .expect("librocksdb-sys exports its manifest directory (links = \"rocksdb\")");
    let include = std::path::Path::new(&rocksdb).join("rocksdb").join("include");
    println!("cargo:rerun-if-changed=src/entity/shim.cc");
    cc::Build::new()
        .cpp(true)
        .file("src/entity/shim.cc")
        .include(include)
        .flag("-std=c++20")
        .flag("-fno-rtti")
        .flag("-include")
        .flag("cstdint")
        .define("NDEBUG", "1")
        .warnings(false)
        .compile("docsim_entity_shim");
}
