//! Giving memory back to the operating system after large unauthenticated bodies.
//!
//! glibc raises its mmap threshold to the size of the largest block it has unmapped, so
//! after one 24 MB body later ones come from the heap arenas, which keep freed memory: a
//! burst of refused uploads would leave the process hundreds of megabytes larger. Two
//! measures (glibc only; elsewhere both are no-ops):
//! - [`keep_large_buffers_mapped`] pins the mmap threshold at start, so buffers of a
//!   megabyte or more are mapped on their own and unmapped when freed;
//! - [`release_after_drop`] trims the arenas after a large refused body, at most one trim
//!   at a time, on a blocking thread.

/// Bodies at least this large are followed by a trim when refused.
const TRIM_AFTER_BYTES: usize = 1024 * 1024;

/// Allocations at least this large get their own mapping.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: std::ffi::c_int = 1024 * 1024;

/// Pins glibc's mmap threshold so large buffers are unmapped as soon as they are freed.
/// Call once at start, before the server takes requests.
pub fn keep_large_buffers_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; it is called with a documented
        // parameter and a positive value, and does not touch memory the program owns.
        let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) };
    }
}

/// Called after a refused body of `bytes` was freed: trims glibc's arenas when it was large.
pub(crate) fn release_after_drop(bytes: usize) {
    if bytes < TRIM_AFTER_BYTES {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    trim::request();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod trim {
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A trim is queued or running; later requests fold into it.
    static PENDING: AtomicBool = AtomicBool::new(false);

    pub(super) fn request() {
        if PENDING.swap(true, Ordering::AcqRel) {
            return;
        }
        let run = || {
            // Cleared first: memory freed while trimming gets a trim of its own.
            PENDING.store(false, Ordering::Release);
            // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes the
            // allocator's own locks and touches no memory the program owns.
            let _ = unsafe { libc::malloc_trim(0) };
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(run);
            }
            Err(_) => run(),
        }
    }
}
