"""The course: the worked examples whose numbers the lessons quote, the lesson source format and its
parser, the answers and how a response is checked, the labs' registry and the bin challenge's
learner-facing verdicts. A layer between the models and the faces (DESIGN.md): it imports
`lowprec.simulations` and `lowprec.formats` (and the leaf modules), never Panel, Bokeh or the app;
the app draws what it parses and computes.

- worked examples: `examples` (`EXAMPLES`, `example(name)`; `lowprec examples`) built from
  `example_record.Example`, with the lesson-specific registries `examples_*`;
- lessons: `lesson_files` (where they are), `lessons` (front matter, directives, placeholders,
  `load_lessons`, `render_blocks`), `lesson_blocks` (predictions, explanations, exercises: syntax,
  computed answers, `check_response`), `lesson_labs` (`LABS`), `placeable` (the widgets a directive
  may place and their records), `feedback` (what a learner is told about an answer);
- `challenge`: the bin challenge's record and every code's verdict.

Importing `lowprec.course` imports none of these.
"""
