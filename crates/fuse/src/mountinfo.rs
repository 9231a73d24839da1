//! This process's mount table, `/proc/self/mountinfo`: which mount is
//! which (its id and device number), and which one is in effect on a
//! directory where several are stacked.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// The mount's id (unique among the mounts that exist now).
    pub id: u64,
    /// The id of the mount it is mounted on.
    pub parent: u64,
    /// The file system's device number (`st_dev` of its files), major and
    /// minor: a FUSE mount's is its connection's own.
    pub device: (u32, u32),
    /// The directory of the file system this mount shows as its root: `/`,
    /// or for a bind mount of a directory inside it, that directory.
    pub root: PathBuf,
    /// Where it is mounted, its octal escapes undone.
    pub point: PathBuf,
    /// The file-system type (`fuse.fslab`, `tmpfs`, ...).
    pub kind: String,
    /// The source (for fslab, the image), its octal escapes undone.
    pub source: String,
}

/// The mounts of this process's namespace now.
pub fn read() -> io::Result<Vec<MountEntry>> {
    Ok(parse(&std::fs::read_to_string("/proc/self/mountinfo")?))
}

/// The entries of a mountinfo text; a line that does not parse is left out.
pub fn parse(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MountEntry> {
    // ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [TAGS...] - TYPE SOURCE SUPER-OPTIONS
    let (left, right) = line.split_once(" - ")?;
    let fields: Vec<&str> = left.split(' ').collect();
    let (major, minor) = fields.get(2)?.split_once(':')?;
    let mut rest = right.split(' ');
    let (kind, source) = (rest.next()?, rest.next()?);
    Some(MountEntry {
        id: fields.first()?.parse().ok()?,
        parent: fields.get(1)?.parse().ok()?,
        device: (major.parse().ok()?, minor.parse().ok()?),
        root: PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(fields.get(3)?))),
        point: PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(fields.get(4)?))),
        kind: kind.to_string(),
        source: String::from_utf8_lossy(&unescape(source)).into_owned(),
    })
}

/// The mount in effect on `point`: of those mounted there, the one no other
/// is mounted on (stacked mounts each have the one below as parent).
pub fn topmost<'a>(entries: &'a [MountEntry], point: &Path) -> Option<&'a MountEntry> {
    let here: Vec<&MountEntry> = entries.iter().filter(|e| e.point == point).collect();
    here.iter().rev().find(|e| !here.iter().any(|above| above.parent == e.id)).copied()
}

/// A mountinfo field with its octal escapes (`\040` for a space, and so on)
/// turned back into bytes; a backslash not followed by three octal digits
/// stays as it is.
pub fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match digits {
            Some(d) if bytes[i] == b'\\' => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8).wrapping_add(b - b'0')));
                i += 4;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
42 27 0:39 / /var/tmp/p/m rw,nosuid,nodev,relatime - fuse fslab rw,user_id=0,group_id=0
43 27 0:40 / /tmp/with\\040space rw,nosuid - fuse.lfs fslab rw,user_id=0
44 42 0:41 / /var/tmp/p/m rw,nosuid - tmpfs tmpfs rw
50 44 0:45 / /var/tmp/p/m rw,nosuid - fuse.fslab /img\\040a rw
46 27 0:43 / /mnt/image rw - fuse.fslab /var/tmp/fs.img rw
";

    #[test]
    fn fields_are_read_and_unescaped() {
        let entries = parse(MOUNTINFO);
        assert_eq!(entries.len(), 6);
        let e = &entries[4];
        assert_eq!((e.id, e.parent, e.device), (50, 44, (0, 45)));
        assert_eq!((e.kind.as_str(), e.source.as_str()), ("fuse.fslab", "/img a"));
        assert_eq!(entries[2].point, Path::new("/tmp/with space"));
    }

    #[test]
    fn the_topmost_of_stacked_mounts_is_the_one_nothing_is_mounted_on() {
        let entries = parse(MOUNTINFO);
        assert_eq!(topmost(&entries, Path::new("/var/tmp/p/m")).map(|e| e.id), Some(50));
        // Listed out of order, the parent links still decide.
        let mut shuffled = entries.clone();
        shuffled.swap(1, 4);
        assert_eq!(topmost(&shuffled, Path::new("/var/tmp/p/m")).map(|e| e.id), Some(50));
        assert_eq!(topmost(&entries, Path::new("/var/tmp/p")), None);
    }

    #[test]
    fn garbage_lines_are_left_out() {
        assert!(parse("garbage\n- fuse fslab\n1 2 x:y / /a rw - t s o\n").is_empty());
    }

    #[test]
    fn escapes_are_undone_and_a_lone_backslash_kept() {
        assert_eq!(unescape("a\\040b\\011c\\134d"), b"a b\tc\\d");
        assert_eq!(unescape("end\\"), b"end\\");
        assert_eq!(unescape("\\09x"), b"\\09x");
    }
}
