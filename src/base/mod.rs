//! The base layer: what every other layer speaks — the protocol's bytes and names,
//! durations and their units, the seeded generator, the wake signal, the strict TOML
//! reader, what the relay says (notices), the filesystem primitives of publication (and of
//! a dir opened once, `indir`), what a file may be written over (`writable`), a run
//! directory's own files (`runfiles`), the "did you mean" of an error, and the process's two
//! outputs that never panic (`console`), and text made safe in markup (`escape`).

pub(crate) mod clock;
pub(crate) mod console;
pub(crate) mod escape;
pub(crate) mod fields;
pub(crate) mod fsio;
pub(crate) mod gauge;
pub(crate) mod indir;
pub(crate) mod notice;
pub(crate) mod protocol;
pub(crate) mod rng;
pub(crate) mod runfiles;
pub(crate) mod signal;
pub(crate) mod suggest;
pub(crate) mod units;
pub(crate) mod writable;

use std::future::Future;
use std::pin::Pin;

/// A boxed future, for the object-safe async traits (host, activity source): the lowest
/// layer's, so every layer above names it without reaching back up to the crate's root.
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A closed set named once: the enum, its `ALL` and `NAMES` (in declaration order), its
/// `name` and `from_name`, the names listed after the enum in the variants' order (a list of
/// another length does not compile).
macro_rules! named {
    ($(#[$m:meta])* $vis:vis enum $E:ident { $($(#[$vm:meta])* $V:ident,)* } names [$($n:expr),* $(,)?]) => {
        $crate::base::named!($(#[$m])* $vis enum $E { $($(#[$vm])* $V,)* });

        impl $E {
            /// Every variant's name, in declaration order.
            #[allow(dead_code)]
            $vis const NAMES: [&'static str; [$(stringify!($V)),*].len()] = [$($n,)*];

            /// Its name in scenarios, reports and summary.json.
            $vis const fn name(self) -> &'static str {
                match self { $($E::$V => $n,)* }
            }

            /// The variant of this name.
            #[allow(dead_code)]
            $vis fn from_name(name: &str) -> Option<$E> {
                Self::ALL.into_iter().find(|v| v.name() == name)
            }
        }
    };
    // A closed set whose names come from elsewhere: the enum and its `ALL` alone.
    ($(#[$m:meta])* $vis:vis enum $E:ident { $($(#[$vm:meta])* $V:ident,)* }) => {
        $(#[$m])*
        $vis enum $E { $($(#[$vm])* $V,)* }

        impl $E {
            /// Every variant, in declaration order.
            $vis const ALL: [$E; [$(stringify!($V)),*].len()] = [$($E::$V,)*];
        }
    };
}
pub(crate) use named;
