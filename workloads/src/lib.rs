//! # docsim-workloads: seeded operation generators (issue 4)
//!
//! Generators of docscript operations driven by one seed; not built yet.
