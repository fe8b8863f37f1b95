//! cent's evaluation lab: the baselines CEnt is compared with, the metrics that compare them,
//! the `cent evaluate` report and plots, and the text and image extensions of the method.
//!
//! Nothing in the product (`cent-host`) depends on this crate: a user explaining, batching or
//! exporting never builds it into a binding, and the lab may measure the product from outside.

pub mod baselines;
pub mod bound;
pub mod evaluate;
pub mod images;
pub mod metrics;
pub mod text;
