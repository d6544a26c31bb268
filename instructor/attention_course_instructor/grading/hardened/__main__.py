import sys

from attention_course_instructor.grading.hardened.cli import main

sys.exit(main())
