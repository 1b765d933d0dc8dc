"""The simulation framework: one `Simulation` declaration per simulation and the command lines
generated from it (`framework.cli`), output plumbing (`framework.io`), knobs shared by
several simulations (`framework.knobs`)."""
