use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "sysdelta")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Micro benchmarks of OS primitives (LMbench 2.0 summary layout).
    Micro(sysdelta::micro::cli::MicroArgs),
}

fn main() {
    let Cmd::Micro(a) = Cli::parse().cmd;
    if let Err(e) = sysdelta::micro::cli::run(&a) {
        eprintln!("sysdelta: {e:#}");
        let bad = e.downcast_ref::<sysdelta::micro::BadInput>().is_some();
        std::process::exit(if bad { 2 } else { 1 });
    }
}
