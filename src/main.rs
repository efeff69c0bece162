//! The `relay-bench` binary: all the work is in the library; this only sets the exit code.

fn main() {
    std::process::exit(relay_bench::main_with_args(std::env::args_os()));
}
