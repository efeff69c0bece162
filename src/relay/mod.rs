//! The relay's two sides, as production runs them: the runner's loop ([`runner`]) over an
//! activity source ([`source`], the wake contract every strategy implements), as its
//! options say ([`options`]), with the tool's handler ([`handler`]) and its answers held
//! until they are out ([`answer`]), and the in-sandbox writer ([`writer`]) over a response
//! waiter (the contract; the waiters are the writer strategies'). Nothing here
//! knows which strategy or host it runs on.

pub(crate) mod answer;
pub(crate) mod handler;
pub(crate) mod options;
pub(crate) mod runner;
pub(crate) mod source;
pub(crate) mod writer;
