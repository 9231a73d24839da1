//! Real programs on a mounted fslab image: cp, diff, tar, sha256sum, find, mv,
//! ln, readlink, git, sparse files (truncate, dd, cp --sparse, tar -S) and
//! extended attributes; then unmount, mount again and check everything again.

mod common;

use common::{assert_lines_eq, have, mkfs_layout, sh_ok, Layout, Mode, Mount};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

/// Bytes of /usr/share/doc to copy, on top of the repository's `crates/`.
const DOC_BUDGET: u64 = 24 << 20;

fn tree_size(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else { return 0 };
    if m.is_dir() {
        std::fs::read_dir(p).map(|rd| rd.flatten().map(|e| tree_size(&e.path())).sum()).unwrap_or(0)
    } else {
        m.len()
    }
}

/// Builds `orig/` on the host file system: a snapshot of the repository's
/// `crates/` (others may edit it while the test runs) and up to DOC_BUDGET
/// bytes of /usr/share/doc.
fn build_source_tree(orig: &Path) {
    std::fs::create_dir_all(orig).expect("mkdir orig");
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crates = std::fs::canonicalize(crates).expect("canonicalize crates/");
    sh_ok(&format!("cp -a '{}' '{}/crates'", crates.display(), orig.display()), orig, T);
    // Build outputs that might sit inside crates/ are not sources.
    sh_ok("find crates -name target -prune -exec rm -rf {} +", orig, T);
    let doc = Path::new("/usr/share/doc");
    if let Ok(rd) = std::fs::read_dir(doc) {
        let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        names.sort();
        std::fs::create_dir_all(orig.join("doc")).expect("mkdir orig/doc");
        let mut total = 0;
        for p in names {
            if total >= DOC_BUDGET {
                break;
            }
            total += tree_size(&p);
            sh_ok(&format!("cp -a '{}' doc/", p.display()), orig, T);
        }
    }
    // A few shapes a source tree may lack: empty file, empty directory, deep path.
    sh_ok("mkdir -p extra/empty_dir extra/a/b/c/d/e/f/g && : > extra/empty_file && echo deep > extra/a/b/c/d/e/f/g/h", orig, T);
}

/// `find` listing of type, mode, size, whole-second mtime and link target.
fn metadata_listing(dir: &Path) -> String {
    // Directory sizes depend on the file system; everything else must match.
    sh_ok(
        "{ find . -type d -printf '%P|%y|%m|-|%TY%Tm%Td%TH%TM%TS\\n'; \
           find . ! -type d -printf '%P|%y|%m|%s|%l|%TY%Tm%Td%TH%TM%TS\\n'; } \
         | sed 's/\\.[0-9]*$//' | LC_ALL=C sort",
        dir,
        T,
    )
}

fn sha_listing(dir: &Path) -> String {
    sh_ok("find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum", dir, T)
}

fn find_counts(dir: &Path) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for (k, arg) in [("all", ""), ("f", "-type f"), ("d", "-type d"), ("l", "-type l")] {
        let out = sh_ok(&format!("find . {arg} | wc -l"), dir, T);
        m.insert(k, out.trim().parse::<usize>().expect("wc -l prints a number"));
    }
    m
}

fn stat_field(path: &Path, fmt: &str) -> String {
    sh_ok(&format!("stat -c '{fmt}' '{}'", path.display()), Path::new("/"), T).trim().to_string()
}

fn sha(path: &Path) -> String {
    let out = sh_ok(&format!("sha256sum '{}'", path.display()), Path::new("/"), T);
    out.split_whitespace().next().expect("sha256sum output").to_string()
}

/// 512-byte blocks allocated to `path`.
fn blocks(path: &Path) -> u64 {
    stat_field(path, "%b").parse().expect("stat %b is a number")
}

const SPARSE_OFFSETS: [u64; 4] = [0, 100 << 20, (512 << 20) + 7, (1 << 30) - 65536];
const SPARSE_CHUNK: u64 = 65536;
/// Allocation allowed for the sparse file: data plus generous metadata.
const SPARSE_MAX_BYTES: u64 = 8 << 20;

/// Which xattr tool is available: setfattr/getfattr or python3.
#[derive(Clone, Copy, PartialEq, Eq)]
enum XattrTool {
    Attr,
    Python,
    None,
}

fn xattr_tool() -> XattrTool {
    if have("setfattr") && have("getfattr") {
        XattrTool::Attr
    } else if have("python3") {
        XattrTool::Python
    } else {
        XattrTool::None
    }
}

fn set_xattr(tool: XattrTool, path: &Path, name: &str, value: &str) {
    match tool {
        XattrTool::Attr => {
            sh_ok(&format!("setfattr -n '{name}' -v '{value}' '{}'", path.display()), Path::new("/"), T);
        }
        XattrTool::Python => {
            sh_ok(
                &format!("python3 -c \"import os; os.setxattr('{}', '{name}', b'{value}')\"", path.display()),
                Path::new("/"),
                T,
            );
        }
        XattrTool::None => {}
    }
}

fn get_xattr(tool: XattrTool, path: &Path, name: &str) -> String {
    let out = match tool {
        XattrTool::Attr => {
            sh_ok(&format!("getfattr --only-values -n '{name}' '{}'", path.display()), Path::new("/"), T)
        }
        XattrTool::Python => sh_ok(
            &format!(
                "python3 -c \"import os,sys; sys.stdout.write(os.getxattr('{}', '{name}').decode())\"",
                path.display()
            ),
            Path::new("/"),
            T,
        ),
        XattrTool::None => String::new(),
    };
    out.trim_end_matches('\n').to_string()
}

fn list_xattrs(path: &Path) -> Vec<String> {
    let out = sh_ok(
        &format!("python3 -c \"import os; print('\\n'.join(sorted(os.listxattr('{}'))))\"", path.display()),
        Path::new("/"),
        T,
    );
    out.lines().filter(|l| l.starts_with("user.")).map(str::to_string).collect()
}

fn xattr_absent(path: &Path, name: &str) -> bool {
    let r = common::run_sh(
        &format!(
            "python3 -c \"import os,errno,sys\ntry:\n os.getxattr('{}', '{name}')\nexcept OSError as e:\n sys.exit(0 if e.errno == errno.ENODATA else 3)\nsys.exit(4)\"",
            path.display()
        ),
        Path::new("/"),
        T,
    );
    r.success()
}

struct Expected {
    sums: String,
    meta: String,
    counts: BTreeMap<&'static str, usize>,
    git_head: Option<String>,
    sparse_sha: String,
    xattr_big: String,
}

fn git(repo: &Path, args: &str) -> String {
    sh_ok(
        &format!(
            "git -c user.name=fslab -c user.email=fslab@example.invalid -c init.defaultBranch=main \
             -c commit.gpgsign=false -c core.hooksPath=/dev/null {args}"
        ),
        repo,
        T,
    )
}

fn real_programs_work_and_survive_remount(layout: Layout) {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path();
    let orig = base.join("orig");
    build_source_tree(&orig);
    let image = base.join("fs.img");
    let mnt = base.join("mnt");
    mkfs_layout(&image, "512M", layout, &[]);
    let m = Mount::new(&image, &mnt, Mode::Background, layout.mount_args());

    // cp -a, diff -r, metadata, find counts, sha256sum.
    sh_ok(&format!("cp -a '{}' tree", orig.display()), &mnt, T);
    sh_ok(&format!("diff -r --no-dereference '{}' tree", orig.display()), &mnt, T);
    let orig_meta = metadata_listing(&orig);
    assert_lines_eq(
        &metadata_listing(&mnt.join("tree")),
        &orig_meta,
        "cp -a must keep types, modes, sizes, mtimes",
    );
    let orig_counts = find_counts(&orig);
    assert!(orig_counts["f"] > 50, "source tree too small: {orig_counts:?}");
    assert_eq!(find_counts(&mnt.join("tree")), orig_counts, "find counts");
    let orig_sums = sha_listing(&orig);
    assert_lines_eq(&sha_listing(&mnt.join("tree")), &orig_sums, "sha256sum of every file");

    // tar c | tar x inside the mount.
    sh_ok("mkdir tarcopy && tar -C tree -cf - . | tar -C tarcopy -xpf -", &mnt, T);
    sh_ok("diff -r --no-dereference tree tarcopy", &mnt, T);
    assert_lines_eq(&metadata_listing(&mnt.join("tarcopy")), &orig_meta, "tar round trip metadata");

    // mv of files and directories, within and across directories.
    sh_ok(
        "mkdir moved && mv tree/crates moved/crates2 && mv moved/crates2 moved/crates \
         && mv tree/extra/empty_file tree/extra/renamed_file && mv tree/extra/a/b/c/d/e/f/g/h moved/h \
         && mv tree/extra/a moved/a_dir",
        &mnt,
        T,
    );
    assert!(!mnt.join("tree/crates").exists() && !mnt.join("moved/crates2").exists(), "mv left the old name");
    sh_ok(&format!("diff -r --no-dereference '{}/crates' moved/crates", orig.display()), &mnt, T);
    assert_eq!(std::fs::read_to_string(mnt.join("moved/h")).expect("read moved/h"), "deep\n");
    assert!(mnt.join("moved/a_dir/b/c/d/e/f/g").is_dir(), "moved directory keeps its subtree");
    assert!(mnt.join("tree/extra/renamed_file").is_file() && !mnt.join("tree/extra/empty_file").exists());
    // `..` of a moved directory must point at its new parent.
    assert_eq!(
        std::fs::canonicalize(mnt.join("moved/a_dir/b/..")).expect("canonicalize .."),
        mnt.join("moved/a_dir")
    );

    // Hard links and symbolic links.
    let long_target = "x".repeat(1000);
    sh_ok(
        &format!(
            "mkdir -p links/sub && echo hello > links/a && ln links/a links/b && ln links/a links/sub/c \
             && ln -s a links/sl && ln -s ../a links/sub/sl2 && ln -s does/not/exist links/dangling \
             && ln -s {long_target} links/long && ln -s sub links/dirlink"
        ),
        &mnt,
        T,
    );
    let links = mnt.join("links");
    assert_eq!(stat_field(&links.join("a"), "%h"), "3", "link count after two ln");
    assert_eq!(stat_field(&links.join("a"), "%i"), stat_field(&links.join("sub/c"), "%i"), "hard link inode");
    assert_eq!(sh_ok("readlink links/sl", &mnt, T).trim(), "a");
    assert_eq!(sh_ok("readlink links/long", &mnt, T).trim(), long_target);
    assert_eq!(sh_ok("cat links/sub/sl2", &mnt, T), "hello\n");
    assert_eq!(sh_ok("cat links/dirlink/c", &mnt, T), "hello\n");
    assert!(!links.join("dangling").exists() && links.join("dangling").is_symlink());
    sh_ok("echo again >> links/b", &mnt, T);
    assert_eq!(sh_ok("cat links/sub/c", &mnt, T), "hello\nagain\n", "write through one link seen by another");
    sh_ok("ln links/b links/d && rm links/b", &mnt, T);
    assert_eq!(stat_field(&links.join("a"), "%h"), "3", "link count after ln + rm");
    assert_eq!(
        stat_field(&mnt.join("moved"), "%h"),
        "4",
        "directory link count: . + parent entry + 2 subdirs"
    );

    // git.
    let git_head = if have("git") {
        let repo = mnt.join("repo");
        std::fs::create_dir(&repo).expect("mkdir repo");
        git(&repo, "init -q");
        sh_ok(&format!("cp -a '{}/crates' .", orig.display()), &repo, T);
        git(&repo, "add -A");
        git(&repo, "commit -q -m first");
        sh_ok("echo change >> crates/cli/Cargo.toml && git rm -q -r --cached crates/fslab >/dev/null && rm -rf crates/fslab", &repo, T);
        git(&repo, "add -A");
        git(&repo, "commit -q -m second");
        git(&repo, "gc -q");
        git(&repo, "fsck --full --strict");
        let log = git(&repo, "log --format=%s");
        assert_eq!(log, "second\nfirst\n", "git log");
        assert_eq!(git(&repo, "status --porcelain"), "", "git status clean");
        Some(git(&repo, "rev-parse HEAD").trim().to_string())
    } else {
        println!("git missing: git checks skipped");
        None
    };

    // A sparse file: truncate -s 1G, dd conv=notrunc at offsets, cp --sparse, tar -S.
    let sp = mnt.join("sparse");
    std::fs::create_dir(&sp).expect("mkdir sparse");
    let chunk = base.join("chunk");
    std::fs::write(&chunk, common::Rng::new(7).bytes(SPARSE_CHUNK as usize)).expect("write chunk");
    sh_ok("truncate -s 1G big", &sp, T);
    for off in SPARSE_OFFSETS {
        sh_ok(
            &format!(
                "dd if='{}' of=big bs={SPARSE_CHUNK} count=1 seek={off} oflag=seek_bytes conv=notrunc status=none",
                chunk.display()
            ),
            &sp,
            T,
        );
    }
    let big = sp.join("big");
    assert_eq!(stat_field(&big, "%s"), (1u64 << 30).to_string(), "sparse file size");
    assert!(
        blocks(&big) * 512 <= SPARSE_MAX_BYTES,
        "1 GiB sparse file with 256 KiB of data occupies {} bytes",
        blocks(&big) * 512
    );
    // The expected content, built on the host (sparse there too).
    let host_big = base.join("big");
    sh_ok("truncate -s 1G big", base, T);
    for off in SPARSE_OFFSETS {
        sh_ok(
            &format!(
                "dd if=chunk of=big bs={SPARSE_CHUNK} count=1 seek={off} oflag=seek_bytes conv=notrunc status=none"
            ),
            base,
            T,
        );
    }
    let sparse_sha = sha(&host_big);
    assert_eq!(sha(&big), sparse_sha, "sparse file content");
    sh_ok("cp --sparse=always big big2 && mkdir x && tar -S -cf t.tar big && tar -C x -xSf t.tar", &sp, T);
    for p in [sp.join("big2"), sp.join("x/big")] {
        assert_eq!(stat_field(&p, "%s"), (1u64 << 30).to_string(), "{} size", p.display());
        assert!(blocks(&p) * 512 <= SPARSE_MAX_BYTES, "{} occupies {} bytes", p.display(), blocks(&p) * 512);
        assert_eq!(sha(&p), sparse_sha, "{} content", p.display());
    }
    std::fs::remove_file(&host_big).expect("rm host big");

    // Extended attributes.
    let tool = xattr_tool();
    let xattr_big = "v".repeat(2000);
    if tool != XattrTool::None && have("python3") {
        set_xattr(tool, &links.join("a"), "user.comment", "hello xattr");
        set_xattr(tool, &links.join("a"), "user.big", &xattr_big);
        set_xattr(tool, &links.join("a"), "user.gone", "soon");
        set_xattr(tool, &mnt.join("moved"), "user.dir", "on a directory");
        sh_ok(
            &format!(
                "python3 -c \"import os; os.removexattr('{}', 'user.gone')\"",
                links.join("a").display()
            ),
            Path::new("/"),
            T,
        );
        assert_eq!(get_xattr(tool, &links.join("d"), "user.comment"), "hello xattr", "xattr via hard link");
        assert_eq!(get_xattr(tool, &links.join("a"), "user.big"), xattr_big);
        assert_eq!(list_xattrs(&links.join("a")), vec!["user.big".to_string(), "user.comment".to_string()]);
        assert!(xattr_absent(&links.join("a"), "user.gone"), "removed xattr must give ENODATA");
    } else {
        println!("no setfattr and no python3: xattr checks skipped");
    }

    let expected =
        Expected { sums: orig_sums, meta: orig_meta, counts: orig_counts, git_head, sparse_sha, xattr_big };
    m.unmount().expect("clean unmount");

    // Mount again and verify everything.
    let m = Mount::new(&image, &mnt, Mode::Background, layout.mount_args());
    verify_after_remount(base, &orig, &mnt, &expected, tool);
    m.unmount().expect("clean unmount after verification");
}

fn verify_after_remount(base: &Path, orig: &Path, mnt: &Path, e: &Expected, tool: XattrTool) {
    sh_ok(&format!("diff -r --no-dereference '{}' tarcopy", orig.display()), mnt, T);
    assert_lines_eq(&metadata_listing(&mnt.join("tarcopy")), &e.meta, "metadata after remount");
    assert_lines_eq(&sha_listing(&mnt.join("tarcopy")), &e.sums, "sha256sums after remount");
    assert_eq!(find_counts(&mnt.join("tarcopy")), e.counts, "find counts after remount");
    sh_ok(&format!("diff -r --no-dereference '{}/crates' moved/crates", orig.display()), mnt, T);
    assert_eq!(std::fs::read_to_string(mnt.join("moved/h")).expect("read moved/h"), "deep\n");
    assert!(!mnt.join("tree/crates").exists(), "renamed directory reappeared under its old name");

    let links = mnt.join("links");
    assert_eq!(stat_field(&links.join("a"), "%h"), "3", "link count after remount");
    assert!(!links.join("b").exists(), "removed link reappeared");
    assert_eq!(sh_ok("cat links/d", mnt, T), "hello\nagain\n");
    assert_eq!(sh_ok("readlink links/sl", mnt, T).trim(), "a");
    assert_eq!(sh_ok("readlink links/dangling", mnt, T).trim(), "does/not/exist");
    assert_eq!(sh_ok("readlink links/long", mnt, T).trim(), "x".repeat(1000));
    assert_eq!(sh_ok("cat links/sub/sl2", mnt, T), "hello\nagain\n");
    assert_eq!(stat_field(&mnt.join("moved"), "%h"), "4", "directory link count after remount");

    if let Some(head) = &e.git_head {
        let repo = mnt.join("repo");
        assert_eq!(git(&repo, "rev-parse HEAD").trim(), head, "git HEAD after remount");
        assert_eq!(git(&repo, "log --format=%s"), "second\nfirst\n", "git log after remount");
        git(&repo, "fsck --full --strict");
        assert_eq!(git(&repo, "status --porcelain"), "", "git status after remount");
    }

    let sp = mnt.join("sparse");
    for p in [sp.join("big"), sp.join("x/big")] {
        assert_eq!(stat_field(&p, "%s"), (1u64 << 30).to_string(), "{} size after remount", p.display());
        assert!(
            blocks(&p) * 512 <= SPARSE_MAX_BYTES,
            "{} occupies {} bytes after remount",
            p.display(),
            blocks(&p) * 512
        );
        assert_eq!(sha(&p), e.sparse_sha, "{} content after remount", p.display());
    }

    if tool != XattrTool::None && have("python3") {
        assert_eq!(get_xattr(tool, &links.join("a"), "user.comment"), "hello xattr", "xattr after remount");
        assert_eq!(get_xattr(tool, &links.join("a"), "user.big"), e.xattr_big, "big xattr after remount");
        assert_eq!(get_xattr(tool, &mnt.join("moved"), "user.dir"), "on a directory");
        assert!(xattr_absent(&links.join("a"), "user.gone"), "removed xattr came back after remount");
    }
    let _ = base;
}

on_every_layout!(real_programs_work_and_survive_remount,);
