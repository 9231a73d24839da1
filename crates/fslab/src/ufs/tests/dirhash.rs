//! Dirhash through the namespace: cost that stays flat as a directory
//! grows, answers that match a model under budgets small enough to force
//! drops and rebuilds, compaction under a concurrent listing, and a hash
//! that is never the truth.

use super::*;
use crate::format::dirent::{init_chunk, DIRBLKSIZ};
use crate::storage::StorageManager;
use crate::ufs::{DirhashOptions, RenameFlags};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashSet};

fn with_dirhash(fs: &mut FileSystem<MemStorage>, change: impl FnOnce(&mut DirhashOptions)) {
    let mut options = fs.dirhash_options();
    change(&mut options);
    fs.set_dirhash_options(options);
}

/// Block reads for creating `from..to` as `file-NNNNN` in `dir`.
fn reads_to_create(fs: &mut FileSystem<MemStorage>, dir: Ino, from: usize, to: usize) -> u64 {
    let before = fs.storage().block_reads();
    for i in from..to {
        file(fs, dir, &format!("file-{i:05}"));
    }
    fs.storage().block_reads() - before
}

#[test]
fn with_dirhash_a_create_reads_as_many_blocks_at_ten_thousand_entries_as_at_one_thousand() {
    let mut fs = fs_with_block(512);
    let d = dir(&mut fs, ROOT, "big").ino;
    reads_to_create(&mut fs, d, 0, 1000);
    let early = reads_to_create(&mut fs, d, 1000, 2000);
    reads_to_create(&mut fs, d, 2000, 9000);
    let late = reads_to_create(&mut fs, d, 9000, 10_000);
    assert!(late * 2 <= early * 3, "{early} block reads for creates 1000..2000, {late} for 9000..10000");
    assert!(fs.dir_index_matches(d).expect("check"));
    assert_eq!(fs.readdir(d, 0, usize::MAX).expect("readdir").len(), 10_002);
}

#[test]
fn without_dirhash_a_create_scans_the_whole_directory() {
    let mut fs = fs_with_block(512);
    with_dirhash(&mut fs, |o| o.enabled = false);
    let d = dir(&mut fs, ROOT, "big").ino;
    reads_to_create(&mut fs, d, 0, 1000);
    let early = reads_to_create(&mut fs, d, 1000, 2000);
    reads_to_create(&mut fs, d, 2000, 5000);
    let late = reads_to_create(&mut fs, d, 5000, 6000);
    assert!(late > early * 3, "{early} block reads for creates 1000..2000, {late} for 5000..6000");
    let stats = fs.dirhash_stats();
    assert_eq!((stats.hits, stats.builds, stats.memory), (0, 0, 0));
    assert!(stats.misses >= 6000);
}

#[test]
fn without_dirhash_a_create_scans_once_and_inserts_where_the_lookup_saw_room() {
    let mut fs = fs_with_block(512);
    with_dirhash(&mut fs, |o| o.enabled = false);
    let d = dir(&mut fs, ROOT, "big").ino;
    reads_to_create(&mut fs, d, 0, 2000);
    let blocks = fs.getattr(d).expect("getattr").attr.size / 512;
    assert!(blocks > 50);
    for i in 2000..2010 {
        let before = fs.dirhash_stats().blocks_read;
        file(&mut fs, d, &format!("file-{i:05}"));
        let read = fs.dirhash_stats().blocks_read - before;
        // The lookup that finds the name absent reads every block once; the
        // insertion rereads the one block it changes (2002 paper §3.3).
        assert!(read <= blocks + 1, "create {i}: {read} directory blocks read, the directory has {blocks}");
    }
}

#[test]
fn a_lookup_remembers_the_entry_after_it_and_lookups_in_order_read_one_block_each() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "big").ino;
    for i in 0..10_000 {
        file(&mut fs, d, &format!("m{i}"));
    }
    let listed = fs.readdir(d, 0, usize::MAX).expect("readdir");
    fs.lookup(d, b"m0").expect("first lookup builds the hash");
    let before = fs.storage().block_reads();
    for pair in listed[2..].windows(2) {
        fs.lookup(d, &pair[0].name).expect("lookup");
        let next = pair[1].next_offset - 1;
        assert_eq!(fs.state.dirs.sequential_next(d), Some(next as u32), "after {:?}", pair[0].name);
    }
    let reads = fs.storage().block_reads() - before;
    assert!(reads <= 9_999 + 20, "{reads} block reads for 9,999 lookups in order");
}

/// One step of the churn: what it does, for the failure message.
#[derive(Debug)]
enum Step {
    Create(usize, String),
    Unlink(usize, String),
    Rename(usize, String, usize, String),
    Lookup(usize, String),
}

fn random_name(rng: &mut SmallRng) -> String {
    let len = rng.gen_range(1..=40);
    let stem = rng.gen_range(0..400);
    format!("{stem}{}", "x".repeat(len))
}

/// Random creates, unlinks, renames and lookups over four directories,
/// compared with a model after every step, with dirhash set by `options`;
/// then every directory is emptied.
fn churn(block_size: u32, options: DirhashOptions, seed: u64, steps: usize) -> crate::ufs::DirhashStats {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut fs = fs_with_block(block_size);
    fs.set_dirhash_options(options);
    let dirs: Vec<Ino> = (0..4).map(|i| dir(&mut fs, ROOT, &format!("d{i}")).ino).collect();
    let mut model: Vec<BTreeMap<String, Ino>> = vec![BTreeMap::new(); dirs.len()];
    for n in 0..steps {
        let d = rng.gen_range(0..dirs.len());
        let name = random_name(&mut rng);
        let step = match rng.gen_range(0..10) {
            0..=3 => Step::Create(d, name),
            4..=5 => Step::Unlink(d, name),
            6..=7 => Step::Rename(d, name, rng.gen_range(0..dirs.len()), random_name(&mut rng)),
            _ => Step::Lookup(d, name),
        };
        // Mostly act on names that exist, or nothing would be removed.
        let step = match step {
            Step::Unlink(d, _) | Step::Rename(d, _, _, _) if !model[d].is_empty() && rng.gen_bool(0.9) => {
                let names: Vec<&String> = model[d].keys().collect();
                let pick = names[rng.gen_range(0..names.len())].clone();
                match step {
                    Step::Rename(_, _, to, new) => Step::Rename(d, pick, to, new),
                    _ => Step::Unlink(d, pick),
                }
            }
            other => other,
        };
        let context = format!("step {n}: {step:?}");
        match &step {
            Step::Create(d, name) => {
                let result = fs.mknod(dirs[*d], name.as_bytes(), kind::REG | 0o644, 0, ME);
                match model[*d].get(name) {
                    Some(_) => assert_eq!(errno(result), libc::EEXIST, "{context}"),
                    None => {
                        let ino = result.expect(&context).ino;
                        model[*d].insert(name.clone(), ino);
                    }
                }
            }
            Step::Unlink(d, name) => {
                let result = fs.unlink(dirs[*d], name.as_bytes());
                match model[*d].remove(name) {
                    Some(_) => result.expect(&context),
                    None => assert_eq!(errno(result), libc::ENOENT, "{context}"),
                }
            }
            Step::Rename(from, name, to, new) => {
                let result = fs.rename(
                    dirs[*from],
                    name.as_bytes(),
                    dirs[*to],
                    new.as_bytes(),
                    RenameFlags::default(),
                );
                match model[*from].get(name).copied() {
                    Some(ino) => {
                        result.expect(&context);
                        model[*from].remove(name);
                        model[*to].insert(new.clone(), ino);
                    }
                    None => assert_eq!(errno(result), libc::ENOENT, "{context}"),
                }
            }
            Step::Lookup(d, name) => {
                let found = fs.lookup(dirs[*d], name.as_bytes()).map(|i| i.ino);
                match model[*d].get(name) {
                    Some(&ino) => assert_eq!(found.expect(&context), ino, "{context}"),
                    None => assert_eq!(errno(found), libc::ENOENT, "{context}"),
                }
            }
        }
        if n % 500 == 499 || n + 1 == steps {
            for (i, &d) in dirs.iter().enumerate() {
                let mut listed: Vec<String> = names(&mut fs, d);
                let mut want: Vec<String> = model[i].keys().cloned().collect();
                listed.sort();
                want.sort();
                assert_eq!(listed, want, "step {n}: listing of d{i}");
                assert!(fs.dir_index_matches(d).expect("check"), "step {n}: hash of d{i}");
            }
        }
    }
    // Empty every directory at the end, so that its trailing blocks are
    // cut away (§3.5) whatever the random steps left behind.
    for (i, &d) in dirs.iter().enumerate() {
        for name in std::mem::take(&mut model[i]).into_keys() {
            fs.unlink(d, name.as_bytes()).unwrap_or_else(|e| panic!("draining d{i}: {name}: {e:?}"));
        }
        assert_eq!(names(&mut fs, d), Vec::<String>::new(), "d{i} drained");
        assert!(fs.dir_index_matches(d).expect("check"), "hash of drained d{i}");
    }
    fs.dirhash_stats()
}

#[test]
fn churn_with_budgets_too_small_for_every_hash_matches_a_model() {
    let checking = DirhashOptions { check: true, min_dir_size: 0, ..DirhashOptions::default() };
    // Room for about one directory's hash at a time: builds, drops and
    // rebuilds all happen, with every answer checked against the blocks.
    let stats = churn(512, DirhashOptions { max_memory: 12 << 10, ..checking }, 1, 6000);
    assert!(stats.builds > 20 && stats.drops > 5 && stats.rebuilds > 5, "{stats:?}");
    assert!(stats.hits > 1000 && stats.misses > 100 && stats.truncated_blocks > 0, "{stats:?}");
    assert!(stats.peak_memory <= 12 << 10, "{stats:?}");
    let stats = churn(4096, DirhashOptions { max_memory: 24 << 10, ..checking }, 2, 6000);
    assert!(stats.builds > 4 && stats.hits > 1000, "{stats:?}");
    let stats = churn(512, DirhashOptions { max_memory: 0, ..checking }, 3, 3000);
    assert_eq!((stats.builds, stats.hits), (0, 0), "a zero budget hashes nothing");
}

#[test]
fn churn_with_dirhash_off_or_default_matches_a_model() {
    let stats = churn(512, DirhashOptions { enabled: false, ..DirhashOptions::default() }, 4, 4000);
    assert_eq!(stats.builds, 0);
    let stats = churn(4096, DirhashOptions { check: true, ..DirhashOptions::default() }, 5, 4000);
    assert!(stats.builds > 0 && stats.misses == 0, "{stats:?}");
}

#[test]
fn switching_dirhash_off_and_on_keeps_every_answer() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d").ino;
    for i in 0..500 {
        file(&mut fs, d, &format!("n{i}"));
    }
    fs.lookup(d, b"n1").expect("lookup");
    assert!(fs.dirhash_stats().memory > 0);
    with_dirhash(&mut fs, |o| o.enabled = false);
    assert_eq!((fs.dirhash_stats().memory, fs.dirhash_stats().hashes), (0, 0));
    for i in 0..500 {
        fs.unlink(d, format!("n{i}").as_bytes()).expect("unlink");
        file(&mut fs, d, &format!("m{i}"));
    }
    with_dirhash(&mut fs, |o| o.enabled = true);
    for i in 0..500 {
        fs.lookup(d, format!("m{i}").as_bytes()).expect("present");
        assert_eq!(errno(fs.lookup(d, format!("n{i}").as_bytes())), libc::ENOENT);
    }
    assert!(fs.dir_index_matches(d).expect("check"));
}

#[test]
fn removing_the_last_entries_frees_the_empty_trailing_blocks() {
    let mut fs = fs_with_block(1024);
    let d = dir(&mut fs, ROOT, "d").ino;
    for i in 0..1000 {
        file(&mut fs, d, &format!("entry-{i:04}"));
    }
    let full = fs.getattr(d).expect("getattr").attr.size;
    assert!(full > 10 * 1024);
    // Removing from the front leaves holes: entries never move, so nothing shrinks.
    for i in 0..500 {
        fs.unlink(d, format!("entry-{i:04}").as_bytes()).expect("unlink");
    }
    assert_eq!(fs.getattr(d).expect("getattr").attr.size, full);
    // Removing the rest from the back cuts the directory to its first block.
    for i in (500..1000).rev() {
        fs.unlink(d, format!("entry-{i:04}").as_bytes()).expect("unlink");
    }
    assert_eq!(fs.getattr(d).expect("getattr").attr.size, 1024);
    assert!(fs.dirhash_stats().truncated_blocks >= full / 1024 - 1);
    assert!(fs.dir_index_matches(d).expect("check"));
    assert_eq!(names(&mut fs, d), Vec::<String>::new());
    fs.rmdir(ROOT, b"d").expect("the emptied directory can be removed");
}

#[test]
fn compaction_keeps_readdir_exact_while_entries_are_removed_during_a_listing() {
    for block_size in [512, 4096] {
        let mut rng = SmallRng::seed_from_u64(u64::from(block_size));
        let mut fs = fs_with_block(block_size);
        let d = dir(&mut fs, ROOT, "d").ino;
        let all: Vec<String> = (0..3000).map(|i| format!("name-{i:05}")).collect();
        for name in &all {
            file(&mut fs, d, name);
        }
        let full = fs.getattr(d).expect("getattr").attr.size;
        // Names removed during the listing: the last two thirds, from the
        // end backwards (so trailing blocks empty and are cut), and a few
        // from anywhere.
        let mut doomed: Vec<String> = all[1000..].to_vec();
        let mut scattered: Vec<String> = all[..1000].iter().filter(|_| rng.gen_bool(0.1)).cloned().collect();
        scattered.shuffle(&mut rng);
        let removed_somewhen: HashSet<String> = doomed.iter().chain(&scattered).cloned().collect();
        let mut seen: Vec<String> = Vec::new();
        let mut offset = 0;
        let mut smallest = full;
        loop {
            let page = fs.readdir(d, offset, 11).expect("page");
            let Some(last) = page.last() else { break };
            offset = last.next_offset;
            seen.extend(page.into_iter().map(|e| String::from_utf8_lossy(&e.name).into_owned()));
            for _ in 0..40 {
                let from_the_end = rng.gen_bool(0.5);
                let next = if from_the_end { doomed.pop() } else { scattered.pop() };
                if let Some(name) = next {
                    fs.unlink(d, name.as_bytes()).expect("unlink");
                }
            }
            // Finish the removals from the end so that the listing's cursor
            // ends up past the directory's new end.
            while doomed.len() > 1500 {
                let name = doomed.pop().expect("doomed");
                fs.unlink(d, name.as_bytes()).expect("unlink");
            }
            smallest = smallest.min(fs.getattr(d).expect("getattr").attr.size);
        }
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "block {block_size}: an entry returned twice");
        for name in all.iter().filter(|n| !removed_somewhen.contains(*n)) {
            assert!(
                unique.contains(name),
                "block {block_size}: {name} was present throughout but not listed"
            );
        }
        assert!(smallest < full / 2, "block {block_size}: the directory never shrank ({smallest} of {full})");
        assert!(fs.dir_index_matches(d).expect("check"));
    }
}

#[test]
fn a_cookie_past_the_end_of_a_shrunk_directory_ends_the_listing() {
    let mut fs = fs_with_block(512);
    let d = dir(&mut fs, ROOT, "d").ino;
    for i in 0..200 {
        file(&mut fs, d, &format!("e{i:03}"));
    }
    let listing = fs.readdir(d, 0, usize::MAX).expect("readdir");
    let cookie = listing[150].next_offset;
    for i in 20..200 {
        fs.unlink(d, format!("e{i:03}").as_bytes()).expect("unlink");
    }
    assert!(fs.getattr(d).expect("getattr").attr.size < cookie);
    assert_eq!(fs.readdir(d, cookie, usize::MAX).expect("readdir past the end"), vec![]);
    // The directory grows again: entries made since may appear, none twice.
    for i in 0..200 {
        file(&mut fs, d, &format!("again{i:03}"));
    }
    let rest = fs.readdir(d, cookie, usize::MAX).expect("readdir");
    assert!(rest.iter().all(|e| e.name.starts_with(b"again")));
}

/// Removes `name`, which must be alone in its chunk, from `dir` by writing
/// an empty chunk over it directly, behind the namespace's back.
fn remove_behind_the_back(fs: &mut FileSystem<MemStorage>, dir: Ino, name: &[u8]) {
    let entries = fs.readdir(dir, 0, usize::MAX).expect("readdir");
    let e = entries.iter().find(|e| e.name == name).expect("present");
    let offset = e.next_offset - 1;
    let bs = u64::from(fs.block_size());
    let mut chunk = vec![0u8; DIRBLKSIZ];
    let chunk_offset = offset / DIRBLKSIZ as u64 * DIRBLKSIZ as u64;
    let keep: Vec<_> = entries
        .iter()
        .filter(|x| (chunk_offset..chunk_offset + 512).contains(&(x.next_offset - 1)) && x.name != name)
        .cloned()
        .collect();
    assert!(keep.is_empty(), "the test wants the entry alone in its chunk");
    init_chunk(&mut chunk);
    let storage = fs.storage();
    storage
        .write_block(dir, (chunk_offset / bs) as i64, (chunk_offset % bs) as usize, &chunk)
        .expect("write behind the back");
}

#[test]
fn a_stale_hash_is_dropped_and_the_blocks_answer() {
    let mut fs = fs_with_block(512);
    let d = dir(&mut fs, ROOT, "d").ino;
    // 250-byte names: one entry per chunk.
    let long = |i: usize| format!("{i:03}{}", "z".repeat(247));
    for i in 0..40 {
        file(&mut fs, d, &long(i));
    }
    fs.lookup(d, long(7).as_bytes()).expect("builds the hash");
    remove_behind_the_back(&mut fs, d, long(7).as_bytes());
    assert_eq!(errno(fs.lookup(d, long(7).as_bytes())), libc::ENOENT, "the blocks say it is gone");
    assert!(fs.dir_index_matches(d).expect("check"));
    // In checking mode the same disagreement is an error.
    fs.lookup(d, long(8).as_bytes()).expect("rebuild");
    with_dirhash(&mut fs, |o| o.check = true);
    remove_behind_the_back(&mut fs, d, long(8).as_bytes());
    let err = fs.lookup(d, long(8).as_bytes()).expect_err("checking mode reports it");
    assert_eq!(err.errno(), libc::EIO);
    assert!(err.to_string().contains("directory hash"), "{err}");
}

#[test]
fn checking_mode_catches_a_name_the_hash_does_not_know() {
    let mut fs = fs_with_block(512);
    let d = dir(&mut fs, ROOT, "d").ino;
    for i in 0..40 {
        file(&mut fs, d, &format!("{i:03}{}", "y".repeat(200)));
    }
    fs.lookup(d, b"000").expect_err("absent; builds the hash");
    // Add an entry behind the hash's back, through the namespace's own
    // code path with the hash switched off for that one call.
    let target = fs.lookup(d, format!("001{}", "y".repeat(200)).as_bytes()).expect("present").ino;
    let hashes_before = fs.dirhash_stats().hashes;
    fs.state.dirs.set_options(DirhashOptions { enabled: true, ..DirhashOptions::default() });
    let saved = std::mem::take(&mut fs.state.dirs);
    fs.link(target, d, b"sneaked").expect("link");
    fs.state.dirs = saved;
    assert_eq!(fs.dirhash_stats().hashes, hashes_before);
    // Without checking, the stale hash says "absent" …
    assert_eq!(errno(fs.lookup(d, b"sneaked")), libc::ENOENT);
    assert!(!fs.dir_index_matches(d).expect("check"), "the check sees the difference");
    // … with checking on, the lookup fails instead of lying.
    with_dirhash(&mut fs, |o| o.check = true);
    assert_eq!(errno(fs.lookup(d, b"sneaked")), libc::EIO);
    assert_eq!(fs.lookup(d, b"sneaked").expect("the blocks answer after the drop").ino, target);
}
