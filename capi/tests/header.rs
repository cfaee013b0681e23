//! include/xunds.h is what cbindgen generates from capi/src with
//! capi/cbindgen.toml: regenerate it and compare (XUNDS_BLESS=1 rewrites
//! the checked-in file instead).

use std::path::Path;

#[test]
fn header_is_generated() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut fresh);
    let path = crate_dir.join("../include/xunds.h");
    if std::env::var_os("XUNDS_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "include/xunds.h differs from what cbindgen generates from capi/src: \
         run `XUNDS_BLESS=1 cargo test -p xunds-capi --test header` and commit it"
    );
}
