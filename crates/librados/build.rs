//! Links the cdylib as Ceph's librados is linked: soname `librados.so.2`
//! (what a program built against Ceph's library asks the loader for) and
//! Ceph's version nodes (src/librados/librados.map: LIBRADOS_PRIVATE and
//! LIBRADOS_14.2.0), so that a binary whose references carry those nodes
//! binds to this library.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_string());
    let map = format!("{dir}/librados.map");
    println!("cargo:rerun-if-changed={map}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librados.so.2");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={map}");
}
