//! The `redline` binary: parses the command line and hands it to the library.

use std::io::IsTerminal;

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("REDLINE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // sqlx logs the value of every database URL parameter it does not know
    // (`sslpassword=…`); that target is kept to errors whatever REDLINE_LOG says.
    let filter = match "sqlx_postgres::options=error".parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    // octocrab logs each failed request as an ERROR line of its own; Redline reports the
    // error itself (`check`, the server's job log), so that line only repeats it, raw.
    // Named in REDLINE_LOG, octocrab logs as asked.
    let octocrab_named = std::env::var("REDLINE_LOG").is_ok_and(|v| v.contains("octocrab"));
    let filter = match "octocrab=off".parse() {
        Ok(directive) if !octocrab_named => filter.add_directive(directive),
        _ => filter,
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal; redirected logs stay plain text.
        .with_ansi(
            std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    // `redline runs | head -5`: the reader may stop reading.
    redline::end_quietly_on_closed_stdout();
    // Empty `REDLINE_*` variables count as unset (compose files pass them so).
    let cli = redline::parse();
    let code = match redline::runtime() {
        Ok(runtime) => {
            let code = runtime.block_on(redline::run(cli));
            // Without waiting for blocking reads still running (a prompt the run no
            // longer needs after a signal): the process ends now.
            runtime.shutdown_background();
            code
        }
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            1
        }
    };
    std::process::exit(code);
}
