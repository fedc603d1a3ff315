//! A reader that closes its end of the pipe (`redline runs | head -5`, `config schema |
//! true`) ends the command quietly: Rust ignores SIGPIPE, so a write to the closed pipe
//! fails and `println!` panics; this turns that panic, and only that one, into exit 0
//! with nothing on stderr, as `head` asked for no more. Everything else still panics as
//! it would.

/// Installs the panic hook that ends the process quietly when stdout's reader is gone.
pub fn end_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if is_closed_stdout(message) {
            std::process::exit(super::EXIT_OK);
        }
        default(info);
    }));
}

/// Whether a panic message is `println!`'s for a write into a closed pipe.
fn is_closed_stdout(message: &str) -> bool {
    // std's text for EPIPE ("Broken pipe (os error 32)"); the process never sets a locale.
    message.starts_with("failed printing to stdout")
        && message.to_ascii_lowercase().contains("broken pipe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_stdout_is_quiet() {
        let epipe = std::io::Error::from_raw_os_error(libc::EPIPE);
        assert_eq!(epipe.kind(), std::io::ErrorKind::BrokenPipe);
        assert!(is_closed_stdout(&format!(
            "failed printing to stdout: {epipe}"
        )));
        assert!(!is_closed_stdout(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!is_closed_stdout(&format!("index out of bounds: {epipe}")));
    }
}
