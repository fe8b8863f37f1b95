//! `cent-nostd`: the allocation-free core of cent, shared by the host pipeline and the device.
//!
//! Data flows one way: a [`schema::Schema`] describes the encoded feature vector; a
//! [`tree::Tree`] (a validated view over fixed-width node records) is turned into a query-specific
//! [`graph::Graph`]; [`search::Search`] pops contrast leaves in increasing cost; and
//! [`counterfactual`] turns a leaf box into a candidate `x'` that respects every constraint.
//! On the device, [`encoder`] / [`quant`] map `x` into latent space, [`atlas`] picks the nearest
//! anchor's tree, [`support`] keeps its answers to values and combinations people have, and
//! [`bundle`] is the one wire format.
//!
//! Nothing here allocates or panics on input; capacities are named constants or const generics
//! and exceeding one is an error value.
//!
//! ```
//! use cent_nostd::schema::{Feature, Schema};
//! use cent_nostd::tree::{Node, Tree};
//! use cent_nostd::graph::Graph;
//! use cent_nostd::search::{Search, Target};
//!
//! // One continuous feature in [0, 1]; the tree says "x0 <= 0.5 -> class 0, else class 1".
//! let mut schema: Schema = Schema::new(2);
//! schema.push(Feature::continuous(0, 0.0, 100.0)).unwrap();
//! let mut bytes = [0u8; 3 * cent_nostd::tree::RECORD_LEN];
//! bytes[0..12].copy_from_slice(&Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 }.to_bytes());
//! bytes[12..24].copy_from_slice(&Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 10 }.to_bytes());
//! bytes[24..36].copy_from_slice(&Node::Leaf { class: 1, purity: 1.0, entropy: 0.0, samples: 10 }.to_bytes());
//! let tree = Tree::new(&bytes, schema.columns(), 2).unwrap();
//! assert_eq!(tree.route(&[0.2]), Ok(1));
//!
//! let x = [0.2f32];
//! let mut graph: Graph<16> = Graph::new();
//! graph.build(&tree, &schema, &schema.default_query(), &x).unwrap();
//! let mut search: Search<16> = Search::new();
//! search.start(&graph).unwrap();
//! let hit = search.next_contrast(&graph, Target::Class(1)).unwrap().unwrap();
//! assert_eq!(hit.leaf, 2);
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod atlas;
pub mod bundle;
pub mod counterfactual;
pub mod encoder;
pub mod graph;
pub mod people;
pub mod quant;
pub mod schema;
pub mod search;
pub mod support;
pub mod tree;

/// Capacities. The constants at the top are the device profile and the defaults of every
/// const-generic type ([`schema::Schema`], [`schema::Query`], [`tree::Bounds`]); [`host`] is the
/// profile the host instantiates the same code with (see README, "Static memory").
///
/// [`host`]: capacity::host
pub mod capacity {
    /// Logical features in a schema.
    pub const FEATURES: usize = 32;
    /// Encoded columns (one-hot groups count one column per category).
    pub const COLUMNS: usize = 64;
    /// Nodes of one surrogate tree (node indices fit a `u16`).
    pub const NODES: usize = 255;
    /// Depth of one surrogate tree.
    pub const DEPTH: usize = 32;
    /// Latent dimensions of the encoder.
    pub const LATENT: usize = 16;
    /// Anchors (and trees) in an atlas.
    pub const ANCHORS: usize = 64;
    /// Layers of a quantized MLP.
    pub const LAYERS: usize = 6;
    /// Width of the widest quantized layer.
    pub const WIDTH: usize = 64;
    /// Classes of the black box.
    pub const CLASSES: usize = 16;
    /// Observed values one feature keeps to on the device ([`crate::support`]).
    pub const VALUES: usize = 256;
    /// Links of a bundle's support.
    pub const LINKS: usize = 8;
    /// Features of one link.
    pub const LINK_FEATURES: usize = 4;

    /// The host profile: the same schema, tree, graph, search and counterfactual code with
    /// workstation-sized limits (wide one-hot encodings, large surrogate trees, many classes).
    pub mod host {
        /// Logical features in a schema.
        pub const FEATURES: usize = 256;
        /// Encoded columns.
        pub const COLUMNS: usize = 2048;
        /// Nodes of one surrogate tree.
        pub const NODES: usize = 4095;
        /// Depth of one surrogate tree.
        pub const DEPTH: usize = super::DEPTH;
        /// Classes of the black box.
        pub const CLASSES: usize = 64;
    }

    // Feature and column indices are `u16` everywhere, categories and classes `u8`, node
    // indices `NodeIdx` (`u16`): every profile must fit them.
    const _: () = assert!(host::FEATURES <= host::COLUMNS);
    const _: () = assert!(host::COLUMNS < u16::MAX as usize);
    const _: () = assert!(host::NODES <= u16::MAX as usize && host::CLASSES <= u8::MAX as usize);
}
