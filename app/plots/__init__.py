"""Pure figure builders over simulation results (Bokeh), one module per topic, plus the shared
visual vocabulary (`style`) and standalone-HTML writing (`html`)."""
