"""nbgrader's exchange, with one hole closed: a submission is collected only from its own author.

nbgrader's shared ``inbound`` folder (mode 2733) lets any student drop a folder named
``<someone else>+<assignment>+<later timestamp>+...`` into it. Stock ``nbgrader collect`` notices
that the folder's owner is not the student it names, logs a warning, and collects it anyway, as that
student's newest submission. :class:`OwnerCheckedCollect` takes each student's newest submission
*that their own account wrote* and refuses the forged ones with an error naming the owner.
The course's ``nbgrader_config.py`` selects it (``ExchangeFactory.collect``).
"""
from __future__ import annotations

import os
import pwd

from nbgrader.exchange.default.collect import ExchangeCollect


class OwnerCheckedCollect(ExchangeCollect):

    def _owner(self, record) -> str:
        uid = os.stat(os.path.join(self.inbound_path, record["filename"])).st_uid
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"uid {uid}"

    def _genuine(self, record) -> bool:
        return self._owner(record) == record["username"]

    def _sort_by_timestamp(self, records):
        # called once per student: their own submissions only, unless every one is forged
        genuine = [r for r in records if self._genuine(r)]
        return super()._sort_by_timestamp(genuine or records)

    def copy_files(self):
        for record in self.src_records:
            if not self._genuine(record):
                self.log.error("not collected: %s names %s but was written by %s",
                               record["filename"], record["username"], self._owner(record))
        self.src_records = [r for r in self.src_records if self._genuine(r)]
        super().copy_files()
