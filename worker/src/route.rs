//! Route: the upstream for an audience, by binary search of the
//! sorted route table.

use crate::config::Route;

/// The route for `audience`, if any.
pub fn lookup<'c>(routes: &'c [Route<'c>], audience: &str) -> Option<&'c Route<'c>> {
    routes
        .binary_search_by(|route| route.audience.as_bytes().cmp(audience.as_bytes()))
        .ok()
        .map(|i| &routes[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &[Route<'static>] = &[
        Route { audience: "billing", origin: "http://b", base_path: "" },
        Route { audience: "orders", origin: "http://o", base_path: "/o" },
        Route { audience: "orders-v2", origin: "http://o2", base_path: "" },
        Route { audience: "users", origin: "http://u", base_path: "" },
    ];

    #[test]
    fn finds_every_route_and_nothing_else() {
        for route in ROUTES {
            assert_eq!(lookup(ROUTES, route.audience), Some(route));
        }
        for missing in ["", "a", "order", "orders-v", "Orders", "zzz", "users "] {
            assert_eq!(lookup(ROUTES, missing), None, "{missing}");
        }
        assert_eq!(lookup(&[], "orders"), None);
    }
}
