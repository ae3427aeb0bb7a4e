#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu 22.04 base),
# with this repository unzipped at /autograder/source. It installs the grader into its own
# virtual environment (/autograder/venv), which run_autograder uses, editable: the grader is
# the source folder, beside its rubrics/ and student_template/ (a plain install copies only
# the package, and finds no rubric). It ends by grading student_template through
# run_autograder (self_check.py): an image that cannot grade fails here.
#   PDL_GRADER_DIR  where the repository is (default /autograder/source)
#   PDL_VENV        where to create the environment (default /autograder/venv)
set -euo pipefail
SOURCE=${PDL_GRADER_DIR:-/autograder/source}
VENV=${PDL_VENV:-/autograder/venv}
cd "$SOURCE"

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# bubblewrap: the sandbox student code runs in; python3-venv: Ubuntu's pip refuses system
# installs (PEP 668) on newer images, a venv works on all of them.
# gcc, python3-dev: the optional C fast path of the virtual GPUs (setup.py); without them the
# build goes on and the grader uses its pure-Python path. util-linux: setpriv (run_autograder
# drops student code to `nobody` where bubblewrap cannot start).
apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip python3-dev gcc \
  libc6-dev bubblewrap util-linux ca-certificates

python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# Gradescope machines have no GPU: the CPU build of torch (a fraction of the CUDA build's
# size) is all the virtual GPUs need. Same pin as scripts/install.sh.
"$VENV/bin/python" -m pip install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
"$VENV/bin/python" -m pip install -q -e "$SOURCE"
# The C fast path next to its sources (where `python -m grader` in $SOURCE imports it from);
# optional=True in setup.py: a failed compile is a warning.
"$VENV/bin/python" setup.py -q build_ext --inplace || echo "setup.sh: no C fast path (pure Python)"
ln -sf "$VENV/bin/pdl-grade" /usr/local/bin/pdl-grade

# Student code must not write the grader nor read the rubrics where it runs unsandboxed.
"$VENV/bin/python" gradescope/lock_down.py "$SOURCE" "$VENV"
"$VENV/bin/python" -c "import torch, grader.vgpu.c_path as c
print('pdl-autograder: torch', torch.__version__, '; C fast path:', 'yes' if c.c_module() else 'no')"
# Fail the image build now rather than every submission later.
PDL_PYTHON="$VENV/bin/python" "$VENV/bin/python" gradescope/self_check.py "$SOURCE"
