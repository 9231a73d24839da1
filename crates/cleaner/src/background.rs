//! The in-process cleaner of a mount: a thread that wakes when a partial
//! segment is written while cleaning is wanted (or after a quiet half
//! second) and cleans while the clean segments are below the high-water
//! mark, taking the file system's lock one mechanism call at a time so
//! that requests are served in between.

use crate::driver::Cleaner;
use crate::mechanism::{LfsAccess, Locked, Mechanism};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running background cleaner. Dropping it stops the thread.
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Starts cleaning `access` with `cleaner`. The thread ends by itself
    /// when the file system stops answering (it was unmounted).
    pub fn spawn<A>(access: A, mut cleaner: Cleaner) -> std::io::Result<Background>
    where
        A: LfsAccess + Send + 'static,
    {
        let mut mechanism = Locked::new(access).map_err(|e| std::io::Error::other(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new().name("fslab-cleaner".into()).spawn(move || {
            // Users' bytes written when a pass last gained nothing: the
            // cleaner's own writes wake `segwait` too, and must not make it
            // clean the same full disk over and over.
            let mut idle_at: Option<u64> = None;
            while !stopping.load(Ordering::Relaxed) {
                // Partial segments written while no cleaning is wanted do
                // not wake it, and the answer comes without the file
                // system's lock: the common case must cost writers nothing.
                let Ok((written, wanted)) = mechanism.wait_for_work(Duration::from_millis(500)) else {
                    return;
                };
                if idle_at == Some(written) || !wanted {
                    continue;
                }
                let Ok(table) = mechanism.segment_table() else { return };
                if table.clean_segments >= table.high_water {
                    continue;
                }
                match cleaner.pass(&mut mechanism) {
                    Ok(pass) => {
                        for seg in &pass.unreadable {
                            eprintln!(
                                "fslab: cleaner ({}): segment {seg} holds a block that cannot be read; \
                                 it is left uncleaned (run fslab fsck on the unmounted image)",
                                cleaner.policy_name()
                            );
                        }
                        let gained =
                            mechanism.segment_table().is_ok_and(|t| t.clean_segments > table.clean_segments);
                        idle_at = if pass.cleaned.is_empty() || !gained { Some(written) } else { None };
                    }
                    Err(e) if e.errno() == libc::EIO => {
                        eprintln!("fslab: cleaner ({}) stopped: {e}", cleaner.policy_name());
                        return;
                    }
                    Err(e) => eprintln!("fslab: cleaner ({}): {e}", cleaner.policy_name()),
                }
            }
        })?;
        Ok(Background { stop, thread: Some(thread) })
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.halt();
    }
}
