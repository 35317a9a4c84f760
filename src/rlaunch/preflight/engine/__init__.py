"""The preflight engine: what a rule sees (`check.Check`, `world.World`), what it reports
(`finding.Finding`), where rules are declared with their families (`registry`), how they run
(`runner`) and how their findings are shown (`report`). It knows no rule."""
