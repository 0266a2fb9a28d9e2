//! glob
