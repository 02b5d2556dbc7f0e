//! ioi-sandbox (work in progress).
