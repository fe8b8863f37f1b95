//! Benchmarks of cent live in `benches/`; this library holds what they share: seeded synthetic
//! models ([`synthetic`]), the fuzz seed corpus built from them ([`seeds`]) and the explainer's
//! static-memory budget ([`memory`]).

pub mod seeds;
pub mod synthetic;

/// The device explainer's static working set, measured with `size_of` at the default capacities.
pub mod memory {
    use cent_nostd::atlas::{Counterfactual, Explainer};
    use cent_nostd::bundle::Bundle;
    use cent_nostd::schema::Query;
    use core::mem::size_of;

    /// The budget the default capacities must fit (README, "Static memory").
    pub const BUDGET: usize = 32 * 1024;

    /// Results a device keeps from one `explain` in the budget.
    pub const RESULTS: usize = 3;

    /// Bytes of what one explanation keeps alive outside the stack frames of `explain`: the
    /// parsed bundle (schema, encoder and classifier views, atlas), the query, the explainer's
    /// graph and search scratch and the answers it compares, and the result vector.
    pub const fn working_set() -> usize {
        size_of::<Bundle<'static>>()
            + size_of::<Query>()
            + size_of::<Explainer>()
            + size_of::<heapless::Vec<Counterfactual, RESULTS>>()
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use cent_nostd::atlas::CANDIDATES;
        use cent_nostd::capacity::NODES;
        use cent_nostd::graph::Graph;
        use cent_nostd::search::Search;

        #[test]
        fn test_default_explainer_fits_budget() {
            // On the 64-bit host pointers and slices are twice their Cortex-M size, so passing
            // here implies passing on the device.
            let total = working_set();
            assert!(total <= BUDGET, "explainer working set {total} B exceeds {BUDGET} B");
        }

        #[test]
        fn test_explainer_is_graph_plus_search_plus_compared_answers() {
            let parts = size_of::<Graph<NODES>>() + size_of::<Search<NODES>>();
            let compared = size_of::<heapless::Vec<Counterfactual, CANDIDATES>>();
            assert_eq!(size_of::<Explainer>(), parts + compared);
            // The graph and search alone grow with the node capacity: 255 nodes need several KiB.
            assert!(parts > 4 * 1024, "graph + search only {parts} B");
        }
    }
}
