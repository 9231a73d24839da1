//! Any mounted directory, through the host's system calls: an fslab mount,
//! kernel ext4 or xfs on a loop device, fuse2fs, or a plain directory. The
//! workload runs in a fresh subdirectory, removed at the end.
//!
//! Dropping caches between phases needs root: `sync`, then
//! `/proc/sys/vm/drop_caches`. Without it the next phase may read from the
//! page cache, and the report says so.

use super::{Backend, Fd, Usage};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A directory of a mounted file system.
pub struct Dir {
    root: PathBuf,
    drop_kernel_caches: bool,
    files: HashMap<Fd, File>,
    next_fd: Fd,
    /// Whether `finish` removes `root` (the run directory `new` made).
    remove_at_finish: bool,
}

impl Dir {
    /// Works in `root` as it is: nothing made, nothing removed at the end
    /// but what the workload removes (aging leaves its files).
    pub fn existing(root: &Path) -> io::Result<Dir> {
        if !root.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        Ok(Dir {
            root: root.to_path_buf(),
            drop_kernel_caches: false,
            files: HashMap::new(),
            next_fd: 1,
            remove_at_finish: false,
        })
    }

    /// Makes the run directory `name` inside `mount` and works there.
    /// `drop_kernel_caches`: whether `drop_caches` may empty the kernel's
    /// caches (root only; it slows everything else on the machine).
    pub fn new(mount: &Path, name: &str, drop_kernel_caches: bool) -> io::Result<Dir> {
        let root = mount.join(name);
        if root.exists() {
            fs::remove_dir_all(&root)?;
        }
        fs::create_dir_all(&root)?;
        Ok(Dir { root, drop_kernel_caches, files: HashMap::new(), next_fd: 1, remove_at_finish: true })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn file(&self, fd: Fd) -> io::Result<&File> {
        self.files.get(&fd).ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn keep(&mut self, file: File) -> Fd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.files.insert(fd, file);
        fd
    }
}

/// `syncfs(2)` on the file system holding `path`.
fn syncfs(path: &Path) -> io::Result<()> {
    let dir = File::open(path)?;
    use std::os::fd::AsRawFd;
    // SAFETY: syncfs takes an open descriptor, which `dir` keeps open for
    // the call, and touches no memory of this process.
    if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // fslab answers an fsync of a directory with a checkpoint, and Linux
    // passes no syncfs to FUSE file systems.
    dir.sync_all()
}

impl Backend for Dir {
    fn mkdir(&mut self, path: &str) -> io::Result<()> {
        fs::create_dir(self.path(path))
    }

    fn rmdir(&mut self, path: &str) -> io::Result<()> {
        fs::remove_dir(self.path(path))
    }

    fn create(&mut self, path: &str) -> io::Result<Fd> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(self.path(path))?;
        Ok(self.keep(file))
    }

    fn open(&mut self, path: &str) -> io::Result<Fd> {
        let file = OpenOptions::new().read(true).write(true).open(self.path(path))?;
        Ok(self.keep(file))
    }

    fn close(&mut self, fd: Fd) -> io::Result<()> {
        self.files.remove(&fd).map(drop).ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn write(&mut self, fd: Fd, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file(fd)?.write_all_at(data, offset)
    }

    fn read(&mut self, fd: Fd, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let file = self.file(fd)?;
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], offset + done as u64)? {
                0 => break,
                n => done += n,
            }
        }
        buf[done..].fill(0);
        Ok(())
    }

    fn fsync(&mut self, fd: Fd) -> io::Result<()> {
        self.file(fd)?.sync_all()
    }

    fn truncate(&mut self, fd: Fd, size: u64) -> io::Result<()> {
        self.file(fd)?.set_len(size)
    }

    fn unlink(&mut self, path: &str) -> io::Result<()> {
        fs::remove_file(self.path(path))
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        fs::rename(self.path(from), self.path(to))
    }

    fn stat(&mut self, path: &str) -> io::Result<Option<u64>> {
        match fs::metadata(self.path(path)) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        syncfs(&self.root)
    }

    fn drop_caches(&mut self) -> io::Result<bool> {
        syncfs(&self.root)?;
        // Dropping the kernel's caches is root's; without it, say so.
        Ok(self.drop_kernel_caches && fs::write("/proc/sys/vm/drop_caches", b"3").is_ok())
    }

    fn usage(&mut self) -> io::Result<Usage> {
        let path = std::ffi::CString::new(self.root.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: statvfs fills the zeroed struct we pass and reads the
        // NUL-terminated path we own for the duration of the call.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let unit = st.f_frsize as u64;
        Ok(Usage { total: st.f_blocks as u64 * unit, free: st.f_bavail as u64 * unit })
    }

    fn finish(&mut self) -> io::Result<()> {
        self.files.clear();
        if !self.remove_at_finish {
            return Ok(());
        }
        fs::remove_dir_all(&self.root)
    }
}
