//! A progress line on standard error: the experiment, the system and
//! configuration being run, and the seconds it has taken so far. On a
//! terminal the line is rewritten in place (and a heartbeat thread keeps
//! the seconds moving through long steps); otherwise each step is a line.
//! The thread only prints: it never touches a file system, so virtual-time
//! runs stay deterministic.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Line {
    experiment: String,
    step: String,
    started: Instant,
}

/// The progress line.
pub struct Progress {
    enabled: bool,
    terminal: bool,
    line: Arc<Mutex<Line>>,
    stop: Arc<AtomicBool>,
    heartbeat: Option<JoinHandle<()>>,
}

fn draw(line: &Line) {
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[K{} {} ({:.0} s)",
        line.experiment,
        line.step,
        line.started.elapsed().as_secs_f64()
    );
    let _ = err.flush();
}

impl Progress {
    /// A progress line, printed only if `enabled`.
    pub fn new(enabled: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let line = Arc::new(Mutex::new(Line {
            experiment: String::new(),
            step: String::new(),
            started: Instant::now(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let heartbeat = if enabled && terminal {
            let (line, stop) = (line.clone(), stop.clone());
            std::thread::Builder::new()
                .name("bench-progress".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(500));
                        if let Ok(line) = line.lock() {
                            if !line.experiment.is_empty() {
                                draw(&line);
                            }
                        }
                    }
                })
                .ok()
        } else {
            None
        };
        Progress { enabled, terminal, line, stop, heartbeat }
    }

    fn with_line(&self, f: impl FnOnce(&mut Line)) {
        if let Ok(mut line) = self.line.lock() {
            f(&mut line);
        }
    }

    /// A new experiment begins.
    pub fn start(&mut self, experiment: &str) {
        self.with_line(|l| {
            l.experiment = experiment.to_string();
            l.step = String::new();
            l.started = Instant::now();
        });
        self.show();
    }

    /// A new step (system, configuration) of the experiment.
    pub fn step(&mut self, step: &str) {
        self.with_line(|l| l.step = step.to_string());
        self.show();
    }

    fn show(&self) {
        if !self.enabled {
            return;
        }
        if let Ok(line) = self.line.lock() {
            if self.terminal {
                draw(&line);
            } else {
                eprintln!(
                    "{} {} ({:.0} s)",
                    line.experiment,
                    line.step,
                    line.started.elapsed().as_secs_f64()
                );
            }
        }
    }

    /// A line of the command's output on standard output, with the
    /// progress line cleared from the terminal first (it is drawn again
    /// at the next step).
    pub fn print(&mut self, line: &str) -> std::io::Result<()> {
        if self.enabled && self.terminal {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()
    }

    /// Something went wrong; the run goes on.
    pub fn warn(&mut self, message: &str) {
        if self.enabled {
            let clear = if self.terminal { "\r\x1b[K" } else { "" };
            eprintln!("{clear}warning: {message}");
        }
    }

    /// The experiment ended after `elapsed`.
    pub fn done(&mut self, elapsed: Duration) {
        if self.enabled {
            let name = self.line.lock().map(|l| l.experiment.clone()).unwrap_or_default();
            let clear = if self.terminal { "\r\x1b[K" } else { "" };
            eprintln!("{clear}{name}: done in {:.1} s", elapsed.as_secs_f64());
        }
        self.with_line(|l| l.experiment.clear());
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.heartbeat.take() {
            let _ = thread.join();
        }
    }
}
