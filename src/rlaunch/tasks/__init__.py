"""Tasks with verifiable rewards, sized for CPU smoke runs."""
