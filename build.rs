//! Links debug builds on glibc Linux with packed relative relocations (DT_RELR).
//!
//! A debug build of debussy carries some 130,000 relative relocations, and applying them
//! is half of the ~5 ms a debug process takes to start. The test suite starts debussy
//! thousands of times (every child it runs goes through `debussy __reaper`), so packing
//! them (`-z pack-relative-relocs`) halves that cost and shortens the suite by seconds.
//!
//! Only debug builds, and only where the loader understands DT_RELR (glibc 2.36 or
//! later) for a target that is the build machine itself: a release binary keeps the
//! classic relocations and runs on older systems too.

use std::env;
use std::process::Command;

/// The first glibc whose loader applies DT_RELR (and defines `GLIBC_ABI_DT_RELR`).
const RELR_GLIBC: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if wants_packed_relocations() {
        println!("cargo:rustc-link-arg=-Wl,-z,pack-relative-relocs");
    }
}

fn wants_packed_relocations() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    var("PROFILE") == "debug"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && var("TARGET") == var("HOST")
        && host_glibc().is_some_and(|version| version >= RELR_GLIBC)
}

/// The build machine's glibc version, as `getconf GNU_LIBC_VERSION` reports it
/// (`glibc 2.36`).
fn host_glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
