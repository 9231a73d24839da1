//! Fuzz target `mount`: arbitrary bytes, zero-padded or cut to a device of
//! 512 KiB to 4 MiB, mounted; if that succeeds, every name, file, link and
//! xattr is read through `ufs::FileSystem` and the file system unmounted. Checksums
//! are left as the bytes have them; `mount_sealed` recomputes them first.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fslab_fuzz::mount_and_walk(fslab_fuzz::image(data, false));
});
