//! Fuzz target `mount_sealed`: as `mount`, but every checksum of every
//! structure the bytes hold is recomputed first (`fslab_fuzz::reseal`), so
//! that mutations pass validation and reach the code that trusts it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fslab_fuzz::mount_and_walk(fslab_fuzz::image(data, true));
});
