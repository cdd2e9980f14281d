//! The `sysdelta` binary: everything it does is in the library's `cli`
//! module, so that the command line is tested and documented in one place.

fn main() -> std::process::ExitCode {
    sysdelta::cli::main()
}
