//! Fuzz target `fsck_ffs_sealed`: as `fsck_ffs`, but every checksum of
//! every FFS structure the bytes hold is recomputed first
//! (`fslab_fuzz::ffs::reseal`), so that mutations pass validation and
//! reach the code that trusts it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fslab_fuzz::ffs::fsck_and_walk(fslab_fuzz::ffs::image(data, true));
});
