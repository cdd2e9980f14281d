use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "sysdelta")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Tracer transports under overload (2005 netlink vs relayfs study).
    Transport(sysdelta::transport::cli::TransportArgs),
}

fn main() {
    let Cmd::Transport(args) = Cli::parse().cmd;
    if let Err(e) = sysdelta::transport::cli::run(&args) {
        eprintln!("sysdelta: {e:#}");
        let bad = e.is::<sysdelta::transport::BadInput>();
        std::process::exit(if bad { 2 } else { 1 });
    }
}
