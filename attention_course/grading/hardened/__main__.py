import sys

from attention_course.grading.hardened.cli import main

sys.exit(main())
