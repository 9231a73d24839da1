//! What the crate's FUSE tests share: whether this machine can mount.

use std::path::Path;

/// Who may mount for a test.
#[allow(dead_code)]
pub enum Mounter {
    /// Only root, with mount(2) itself.
    RootOnly,
    /// Root, or another user through the setuid `fusermount3`.
    RootOrFusermount,
}

/// Whether this machine can mount FUSE file systems as `mounter` says;
/// says why not. Only a missing /dev/fuse, or a missing way for this user
/// to mount, skips a test: any other mount error fails it.
pub fn fuse_available(mounter: Mounter) -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let why = if !Path::new("/dev/fuse").exists() {
        Some("no /dev/fuse")
    } else if root {
        None
    } else {
        match mounter {
            Mounter::RootOnly => Some("mount(2) of /dev/fuse needs root"),
            Mounter::RootOrFusermount if !on_path("fusermount3") => {
                Some("no fusermount3 (needed to mount as a user other than root)")
            }
            Mounter::RootOrFusermount => None,
        }
    };
    if let Some(why) = why {
        println!("skipped: {why}");
        eprintln!("skipped: {why}");
    }
    why.is_none()
}

fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// The kernel's FUSE-over-io_uring parameter, set to `Y` while this lives
/// and put back as it was when dropped. The tests of one binary that set
/// it take turns, or one could take another's `Y` for the value to put
/// back.
#[allow(dead_code)]
pub struct UringEnabled(String, std::sync::MutexGuard<'static, ()>);

#[allow(dead_code)]
static URING_PARAMETER: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[allow(dead_code)]
impl UringEnabled {
    /// Sets the parameter (root only); `None`, saying why, where this
    /// kernel has no FUSE over io_uring or this sandbox forbids io_uring.
    pub fn set() -> Option<UringEnabled> {
        let path = fslab_fuse::kernel::queue::ENABLE_URING;
        let Ok(before) = std::fs::read_to_string(path) else {
            println!("skipped: this kernel has no FUSE over io_uring ({path} is missing)");
            return None;
        };
        if let Err(e) = fslab_fuse::kernel::queue::rings_allowed() {
            println!("skipped: io_uring is not allowed here: {e}");
            return None;
        }
        let turn = URING_PARAMETER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = std::fs::read_to_string(path).unwrap_or(before);
        let restore = UringEnabled(before.trim().to_string(), turn);
        std::fs::write(path, "Y").expect("enable FUSE over io_uring");
        Some(restore)
    }
}

impl Drop for UringEnabled {
    fn drop(&mut self) {
        let _ = std::fs::write(fslab_fuse::kernel::queue::ENABLE_URING, &self.0);
    }
}

/// Runs the calling thread on CPU 0 only, so that its requests go to one
/// ring queue.
#[allow(dead_code)]
pub fn pin_to_cpu_0() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes in it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sets bit 0 of the set.
    unsafe { libc::CPU_SET(0, &mut set) };
    // SAFETY: the set outlives the call; 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(rc, 0, "sched_setaffinity: {}", std::io::Error::last_os_error());
}
