//! The attack corpus and the differential tests of the gateway live in
//! `tests/`; what they share with the fuzz targets is `testkit::gateway`.
