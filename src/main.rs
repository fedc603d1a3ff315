//! The `redline` binary: parses the command line and hands it to the library.

use clap::Parser;

#[tokio::main]
async fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("REDLINE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cli = redline::cli::Cli::parse();
    let code = redline::cli::run(cli).await;
    std::process::exit(code);
}
