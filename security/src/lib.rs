//! Attack corpus and differential tests of the gateway module (see tests/).
