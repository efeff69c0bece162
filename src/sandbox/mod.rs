//! The sandbox layer: a relay directory and the sandbox around it ([`dir`]: files,
//! watches, the in-sandbox watch program, real or in memory), and the runner's counted
//! view of it ([`host`]: local, an emulated remote daemon, the real sandbox-agent daemon
//! and the delay proxy on its wire).

pub(crate) mod dir;
pub(crate) mod host;
