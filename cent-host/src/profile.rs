//! The core at the host's capacity ([`cent_nostd::capacity::host`]).
//!
//! The core's schema, query, box, graph and search are one implementation with capacities as
//! const parameters; the device instantiates them with the small defaults, the host with these
//! aliases. Everything the host computes per query (explain, baselines, metrics) uses this
//! profile; only what goes into a bundle is narrowed to the device's, by [`device_schema`].

use cent_nostd::capacity as device;
use cent_nostd::tree::{Tree, TreeError};
use std::fmt;

pub use cent_nostd::capacity::host::{CLASSES, COLUMNS, FEATURES, NODES};

/// A schema of up to [`FEATURES`] features and [`COLUMNS`] columns.
pub type Schema = cent_nostd::schema::Schema<FEATURES, COLUMNS>;
/// A query over a host [`Schema`].
pub type Query = cent_nostd::schema::Query<FEATURES, COLUMNS>;
/// A tree node's box over up to [`COLUMNS`] columns.
pub type Bounds = cent_nostd::tree::Bounds<COLUMNS>;
/// The query graph of a tree of up to [`NODES`] nodes.
pub type Graph = cent_nostd::graph::Graph<NODES>;
/// The search over a host [`Graph`].
pub type Search = cent_nostd::search::Search<NODES>;

/// Validates a host tree: up to [`NODES`] nodes over `columns` (up to [`COLUMNS`]) columns.
///
/// # Errors
/// The core's [`TreeError`] naming the first bad node.
pub fn tree(bytes: &[u8], columns: usize, classes: usize) -> Result<Tree<'_>, TreeError> {
    Tree::within::<NODES, COLUMNS>(bytes, columns, classes)
}

/// A schema too large for a device bundle: its figures, with the device's limits in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceCapacity {
    pub features: usize,
    pub columns: usize,
    pub classes: usize,
}

impl fmt::Display for DeviceCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let checks = [
            (self.features, device::FEATURES, "features"),
            (self.columns, device::COLUMNS, "encoded columns"),
            (self.classes, device::CLASSES, "classes"),
        ];
        let over: Vec<String> = checks
            .iter()
            .filter(|(n, max, _)| n > max)
            .map(|(n, max, what)| format!("{n} {what} (the device holds at most {max})"))
            .collect();
        write!(
            f,
            "too large for a device bundle: {}; merge categories (`map`/`other` in the schema) or drop features",
            over.join(", ")
        )
    }
}

impl std::error::Error for DeviceCapacity {}

/// The device's schema for a host one: the same features, transitions and weights.
///
/// # Errors
/// [`DeviceCapacity`] when the features, columns or classes exceed the device profile.
pub fn device_schema(schema: &Schema) -> Result<cent_nostd::schema::Schema, DeviceCapacity> {
    let too_large =
        DeviceCapacity { features: schema.features().len(), columns: schema.columns(), classes: schema.classes() };
    if schema.classes() > device::CLASSES {
        return Err(too_large);
    }
    schema.resize().map_err(|_| too_large)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cent_nostd::capacity;
    use cent_nostd::schema::Feature;

    #[test]
    fn test_wide_schema_fits_the_host_and_not_the_device() {
        let mut wide = Schema::new(2);
        wide.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        wide.push(Feature::categorical(1, 41)).unwrap();
        wide.push(Feature::categorical(42, 60)).unwrap();
        assert_eq!(wide.columns(), 102);
        let err = device_schema(&wide).unwrap_err();
        assert_eq!(err, DeviceCapacity { features: 3, columns: 102, classes: 2 });
        assert_eq!(
            err.to_string(),
            format!(
                "too large for a device bundle: 102 encoded columns (the device holds at most {}); merge \
                 categories (`map`/`other` in the schema) or drop features",
                capacity::COLUMNS
            )
        );
        assert!(device_schema(&Schema::new(40)).unwrap_err().to_string().contains("40 classes"));
        let mut narrow = Schema::new(2);
        narrow.push(Feature::categorical(0, 3)).unwrap();
        narrow.set_transition(0, 2, 0, false).unwrap();
        let device = device_schema(&narrow).unwrap();
        assert_eq!(device.features(), narrow.features());
        assert_eq!(device.transition_mask(2), narrow.transition_mask(2));
        assert_eq!(device.transition_mask(2) & 1, 0);
    }
}
