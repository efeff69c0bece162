//! The `relay-bench` binary: all the work is in the library; this only sets the exit code,
//! and the allocator (mimalloc: a virtual fleet allocates per event, see docs/performance.md).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(relay_bench::main_with_args(std::env::args_os()));
}
