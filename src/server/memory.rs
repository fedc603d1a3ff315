//! Giving memory back to the operating system after large unauthenticated bodies.
//!
//! glibc raises its mmap threshold to the size of the largest block it has unmapped, so
//! after one 24 MB body later ones come from the heap arenas, which keep freed memory: a
//! burst of refused uploads would leave the process tens to hundreds of megabytes larger.
//! [`keep_large_buffers_mapped`] pins the threshold at start, so every buffer of a megabyte
//! or more is mapped on its own and unmapped when freed.
//!
//! Measured with `tests/serve_memory.rs` (20 concurrent 24 MB bodies with a wrong signature,
//! 48 MiB budget, debug build): resident set after the burst +49 MiB without any measure,
//! +24 MiB with `malloc_trim(0)` after each large refused body, +2 MiB with the pinned
//! threshold alone — so only the threshold is used.

/// Allocations at least this large get their own mapping.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: std::ffi::c_int = 1024 * 1024;

/// Pins glibc's mmap threshold so large buffers are unmapped as soon as they are freed
/// (elsewhere a no-op). Call once at start, before the server takes requests.
pub(crate) fn keep_large_buffers_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; it is called with a documented
        // parameter and a positive value, and does not touch memory the program owns.
        let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) };
    }
}
