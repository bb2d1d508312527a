"""The core tools' names, kinds, descriptions and argument schemas, for `catalog.py`.

Generated from the tool classes by `python -m recursive_cli.tools.catalog`: do not edit.
"""

from typing import Any

SPECS: dict[str, dict[str, Any]] = {'files.ReadFileTool': {'name': 'read_file',
                        'kind': 'read',
                        'description': 'Read a text file and return its lines numbered from 1 '
                                       '(`number<TAB>text`). Shows at most 2000 lines; use `offset` and '
                                       '`limit` to page through long files. Read a file before editing it. '
                                       'An image file (PNG, JPEG, GIF, WebP) is returned as the image. Other '
                                       'binary files and directories are refused (use list_dir for '
                                       'directories).',
                        'parameters': {'type': 'object',
                                       'properties': {'path': {'description': 'File to read, relative to the '
                                                                              'workspace.',
                                                               'type': 'string'},
                                                      'offset': {'description': 'First line to show '
                                                                                '(1-based).',
                                                                 'anyOf': [{'type': 'integer', 'minimum': 1},
                                                                           {'type': 'null'}],
                                                                 'default': None},
                                                      'limit': {'description': 'Most lines to show (default '
                                                                               '2000).',
                                                                'anyOf': [{'type': 'integer', 'minimum': 1},
                                                                          {'type': 'null'}],
                                                                'default': None}},
                                       'required': ['path']}},
 'files.WriteFileTool': {'name': 'write_file',
                         'kind': 'edit',
                         'description': "Create a file, or replace a file's whole content, creating parent "
                                        'directories as needed. Use it for new files; to change part of an '
                                        'existing file prefer edit_file or apply_patch, which do not need '
                                        'the whole file resent.',
                         'parameters': {'type': 'object',
                                        'properties': {'path': {'description': 'File to write, relative to '
                                                                               'the workspace.',
                                                                'type': 'string'},
                                                       'content': {'description': 'The complete new content '
                                                                                  'of the file.',
                                                                   'type': 'string'}},
                                        'required': ['path', 'content']}},
 'files.EditFileTool': {'name': 'edit_file',
                        'kind': 'edit',
                        'description': 'Replace an exact piece of text in a file. `old_string` must match '
                                       'the file exactly (whitespace and indentation included) and occur '
                                       'exactly once, unless replace_all is true; include a few surrounding '
                                       'lines to make it unique. Read the file first.',
                        'parameters': {'type': 'object',
                                       'properties': {'path': {'description': 'File to edit, relative to the '
                                                                              'workspace.',
                                                               'type': 'string'},
                                                      'old_string': {'description': 'Exact text to replace, '
                                                                                    'including whitespace '
                                                                                    'and indentation.',
                                                                     'type': 'string'},
                                                      'new_string': {'description': 'Text to put in its '
                                                                                    'place.',
                                                                     'type': 'string'},
                                                      'replace_all': {'description': 'Replace every '
                                                                                     'occurrence instead of '
                                                                                     'exactly one.',
                                                                      'type': 'boolean',
                                                                      'default': False}},
                                       'required': ['path', 'old_string', 'new_string']}},
 'patch.ApplyPatchTool': {'name': 'apply_patch',
                          'kind': 'edit',
                          'description': 'Add, update, delete or move files with one patch in the V4A '
                                         'format:\n'
                                         '*** Begin Patch\n'
                                         '*** Add File: path/new.py\n'
                                         '+line of the new file\n'
                                         '*** Update File: path/old.py\n'
                                         '@@ def nearby_function():\n'
                                         ' context line\n'
                                         '-removed line\n'
                                         '+added line\n'
                                         ' context line\n'
                                         '*** Delete File: path/gone.py\n'
                                         '*** End Patch\n'
                                         'In an update, `@@` may name a line (class or function) that '
                                         'locates the hunk; give about 3 unchanged context lines around each '
                                         'change, prefixed by a space. `*** Move to: new/path` after an '
                                         'Update header renames the file. Prefer this or edit_file over '
                                         'rewriting whole files.',
                          'parameters': {'type': 'object',
                                         'properties': {'patch': {'description': "The whole patch, from '*** "
                                                                                 "Begin Patch' to '*** End "
                                                                                 "Patch'.",
                                                                  'type': 'string'}},
                                         'required': ['patch']}},
 'listing.ListDirTool': {'name': 'list_dir',
                         'kind': 'read',
                         'description': 'Show a directory as an indented tree (directories end with `/`, '
                                        'symlinks show their target), `depth` levels deep, at most 500 '
                                        'entries. `.git` is skipped and dependency/cache folders such as '
                                        'node_modules are not expanded. Use it to get oriented; use glob to '
                                        'find files by name and search_files to find text.',
                         'parameters': {'type': 'object',
                                        'properties': {'path': {'description': 'Directory to list, relative '
                                                                               'to the workspace.',
                                                                'type': 'string',
                                                                'default': '.'},
                                                       'depth': {'description': 'How many levels deep to go '
                                                                                '(1 = only its entries).',
                                                                 'type': 'integer',
                                                                 'minimum': 1,
                                                                 'maximum': 10,
                                                                 'default': 2}}}},
 'listing.GlobTool': {'name': 'glob',
                      'kind': 'read',
                      'description': 'Find files whose path matches a glob pattern, relative to `path`. `*` '
                                     'and `?` stay within one directory, `**/` matches any number of '
                                     'directories (so `*.py` matches only the top level and `**/*.py` every '
                                     'Python file), `{a,b}` gives alternatives. Files ignored by .gitignore '
                                     'are left out. Newest first, at most 200 paths.',
                      'parameters': {'type': 'object',
                                     'properties': {'pattern': {'description': 'Glob such as `**/*.py`, '
                                                                               '`src/*.ts` or '
                                                                               '`**/test_*.{py,txt}`.',
                                                                'type': 'string'},
                                                    'path': {'description': 'Directory the pattern is '
                                                                            'relative to (default: the '
                                                                            'workspace).',
                                                             'type': 'string',
                                                             'default': '.'}},
                                     'required': ['pattern']}},
 'search.SearchFilesTool': {'name': 'search_files',
                            'kind': 'read',
                            'description': 'Search file contents for a regular expression and list matching '
                                           'lines as `path:line:text`. Searches `path` (default: the whole '
                                           'workspace), skipping files ignored by .gitignore and binary '
                                           'files; `glob` narrows the files (`*.py` matches by name '
                                           'anywhere). Use it to find definitions, usages and strings before '
                                           'reading files. Returns at most max_results (default 100) lines.',
                            'parameters': {'type': 'object',
                                           'properties': {'pattern': {'description': 'Regular expression to '
                                                                                     'look for in each line.',
                                                                      'type': 'string'},
                                                          'path': {'description': 'File or directory to '
                                                                                  'search (default: the '
                                                                                  'workspace).',
                                                                   'type': 'string',
                                                                   'default': '.'},
                                                          'glob': {'description': 'Only files matching this '
                                                                                  'glob, e.g. `*.py` or '
                                                                                  '`src/**/*.ts`.',
                                                                   'anyOf': [{'type': 'string'},
                                                                             {'type': 'null'}],
                                                                   'default': None},
                                                          'case_insensitive': {'description': 'Ignore letter '
                                                                                              'case.',
                                                                               'type': 'boolean',
                                                                               'default': False},
                                                          'max_results': {'description': 'Most matching '
                                                                                         'lines to return.',
                                                                          'type': 'integer',
                                                                          'minimum': 1,
                                                                          'maximum': 2000,
                                                                          'default': 100}},
                                           'required': ['pattern']}},
 'shell.RunShellTool': {'name': 'run_shell',
                        'kind': 'shell',
                        'description': 'Run a shell command (bash -c) in the workspace and return its '
                                       'combined stdout and stderr followed by the exit code. Use it to run '
                                       'tests, builds, linters, git and other programs. There is no terminal '
                                       'and no input: avoid interactive commands and editors. The command '
                                       'and everything it started are killed after timeout_seconds (default '
                                       '120 s). When the shell exits, whatever it left running in the '
                                       'background (`server &`, even with nohup or setsid) is stopped: '
                                       'start, use and stop a server within one command; long-lived work '
                                       'belongs to run_background (loop mode). Long output is cut in the '
                                       'middle, keeping its start and end.',
                        'parameters': {'type': 'object',
                                       'properties': {'command': {'description': 'Shell command line, run '
                                                                                 'with bash -c in the '
                                                                                 'workspace.',
                                                                  'type': 'string'},
                                                      'timeout_seconds': {'description': 'Kill the command '
                                                                                         'after this many '
                                                                                         'seconds (default '
                                                                                         '120).',
                                                                          'anyOf': [{'type': 'number',
                                                                                     'exclusiveMinimum': 0},
                                                                                    {'type': 'null'}],
                                                                          'default': None}},
                                       'required': ['command']}},
 'web.WebFetchTool': {'name': 'web_fetch',
                      'kind': 'read',
                      'description': 'Download a web page or file over http(s) and return it as text: HTML '
                                     'is turned into readable text (scripts and styles dropped, link targets '
                                     'kept in parentheses), other text types are returned as is, binary '
                                     'content is refused. Use it to read documentation, issues or API '
                                     'responses the task needs.',
                      'parameters': {'type': 'object',
                                     'properties': {'url': {'description': 'Full http:// or https:// URL.',
                                                            'type': 'string'},
                                                    'max_bytes': {'description': 'Most bytes of the body to '
                                                                                 'download.',
                                                                  'type': 'integer',
                                                                  'minimum': 1,
                                                                  'maximum': 20000000,
                                                                  'default': 1000000}},
                                     'required': ['url']}},
 'todo.TodoWriteTool': {'name': 'todo_write',
                        'kind': 'other',
                        'description': 'Keep a task list for work with several steps: send the whole list '
                                       "each time, with each item's status (pending, in_progress, "
                                       'completed). Mark an item in_progress before starting it and '
                                       'completed as soon as it is done. The user sees the list. Skip it for '
                                       'simple one-step tasks.',
                        'parameters': {'type': 'object',
                                       'properties': {'todos': {'description': 'The complete task list; it '
                                                                               'replaces the previous one.',
                                                                'type': 'array',
                                                                'items': {'type': 'object',
                                                                          'properties': {'content': {'description': 'What '
                                                                                                                    'to '
                                                                                                                    'do, '
                                                                                                                    'as '
                                                                                                                    'a '
                                                                                                                    'short '
                                                                                                                    'imperative '
                                                                                                                    'sentence.',
                                                                                                     'type': 'string',
                                                                                                     'minLength': 1},
                                                                                         'status': {'description': 'pending, '
                                                                                                                   'in_progress '
                                                                                                                   '(one '
                                                                                                                   'at '
                                                                                                                   'a '
                                                                                                                   'time) '
                                                                                                                   'or '
                                                                                                                   'completed.',
                                                                                                    'type': 'string',
                                                                                                    'enum': ['completed',
                                                                                                             'in_progress',
                                                                                                             'pending'],
                                                                                                    'default': 'pending'}},
                                                                          'required': ['content']}}},
                                       'required': ['todos']}},
 'memory.RememberTool': {'name': 'remember',
                         'kind': 'other',
                         'description': 'Save a fact about this workspace for future sessions (build and '
                                        'test commands, conventions, where things are, user preferences). '
                                        'Saving under an existing key replaces its value. Use recall to read '
                                        'facts back.',
                         'parameters': {'type': 'object',
                                        'properties': {'key': {'description': 'Short name for the fact, e.g. '
                                                                              '`test command`.',
                                                               'type': 'string',
                                                               'minLength': 1},
                                                       'value': {'description': 'The fact to keep.',
                                                                 'type': 'string'}},
                                        'required': ['key', 'value']}},
 'memory.RecallTool': {'name': 'recall',
                       'kind': 'read',
                       'description': 'Read facts saved with remember in earlier sessions of this workspace: '
                                      'all of them, or those whose key or value contains `query` '
                                      '(case-insensitive).',
                       'parameters': {'type': 'object',
                                      'properties': {'query': {'description': 'Text to look for in keys and '
                                                                              'values; omit to list '
                                                                              'everything.',
                                                               'anyOf': [{'type': 'string'},
                                                                         {'type': 'null'}],
                                                               'default': None}}}}}
