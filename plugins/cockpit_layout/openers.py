"""What the layout plugin opens in the TUI, declared (the TUI names no plugin):

* ``layout-job`` (key ``l``): the selected job's TP/PP/DP form, started from the job's own
  launch line (PP 4 where its argv says so; else TP = its GPUs per node, PP = 1), then
  ``check layout --job ID`` and the picture;
* ``layout-plan`` (the palette): a plan form, nodes from the selected nodes;
* ``layout`` (the screen's name: the palette command, ``:layout``): the job's form when a
  job is selected, else the plan form.
"""

from __future__ import annotations

from dataclasses import replace

from cockpit.plugins.api import FormField, FormSpec, OpenerSpec

_SIZES = (FormField("tp", "TP (tensor)"), FormField("pp", "PP (pipeline)", 1), FormField("dp", "DP (data)"))

JOB_FORM = FormSpec("Layout of job {job_id} {job_name} ({job_nodes} nodes)", _SIZES,
                    prefill="cockpit_layout.jobspec:form_prefill")
PLAN_FORM = FormSpec("Plan a layout: nodes and TP/PP/DP",
                     (FormField("nodes", "nodes (hostlist or count)", selected_nodes=True),
                      FormField("gpus_per_node", "GPUs per node"), *_SIZES))

JOB = OpenerSpec("layout-job", needs="job", form=JOB_FORM, check="layout", screen="layout",
                 missing="select a job (jobs view, a job's detail or a GPU it holds) to validate its layout")
OPENERS = (
    JOB,
    replace(JOB, name="layout", otherwise="layout-plan"),
    OpenerSpec("layout-plan", "Layout: plan (nodes + TP/PP/DP)", "Validate a planned layout before submitting",
               form=PLAN_FORM, check="layout", screen="layout"),
)
