//! The `ioi-run` command line: a thin layer over the `ioi_run` library.

fn main() {
    std::process::exit(ioi_run::cli::main());
}
