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
                        'parameters': {'properties': {'path': {'description': 'File to read, relative to the '
                                                                              'workspace.',
                                                               'type': 'string'},
                                                      'offset': {'anyOf': [{'minimum': 1, 'type': 'integer'},
                                                                           {'type': 'null'}],
                                                                 'default': None,
                                                                 'description': 'First line to show '
                                                                                '(1-based).'},
                                                      'limit': {'anyOf': [{'minimum': 1, 'type': 'integer'},
                                                                          {'type': 'null'}],
                                                                'default': None,
                                                                'description': 'Most lines to show (default '
                                                                               '2000).'}},
                                       'required': ['path'],
                                       'type': 'object'}},
 'files.WriteFileTool': {'name': 'write_file',
                         'kind': 'edit',
                         'description': "Create a file, or replace a file's whole content, creating parent "
                                        'directories as needed. Use it for new files; to change part of an '
                                        'existing file prefer edit_file or apply_patch, which do not need '
                                        'the whole file resent.',
                         'parameters': {'properties': {'path': {'description': 'File to write, relative to '
                                                                               'the workspace.',
                                                                'type': 'string'},
                                                       'content': {'description': 'The complete new content '
                                                                                  'of the file.',
                                                                   'type': 'string'}},
                                        'required': ['path', 'content'],
                                        'type': 'object'}},
 'files.EditFileTool': {'name': 'edit_file',
                        'kind': 'edit',
                        'description': 'Replace an exact piece of text in a file. `old_string` must match '
                                       'the file exactly (whitespace and indentation included) and occur '
                                       'exactly once, unless replace_all is true; include a few surrounding '
                                       'lines to make it unique. Read the file first.',
                        'parameters': {'properties': {'path': {'description': 'File to edit, relative to the '
                                                                              'workspace.',
                                                               'type': 'string'},
                                                      'old_string': {'description': 'Exact text to replace, '
                                                                                    'including whitespace '
                                                                                    'and indentation.',
                                                                     'type': 'string'},
                                                      'new_string': {'description': 'Text to put in its '
                                                                                    'place.',
                                                                     'type': 'string'},
                                                      'replace_all': {'default': False,
                                                                      'description': 'Replace every '
                                                                                     'occurrence instead of '
                                                                                     'exactly one.',
                                                                      'type': 'boolean'}},
                                       'required': ['path', 'old_string', 'new_string'],
                                       'type': 'object'}},
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
                          'parameters': {'properties': {'patch': {'description': "The whole patch, from '*** "
                                                                                 "Begin Patch' to '*** End "
                                                                                 "Patch'.",
                                                                  'type': 'string'}},
                                         'required': ['patch'],
                                         'type': 'object'}},
 'listing.ListDirTool': {'name': 'list_dir',
                         'kind': 'read',
                         'description': 'Show a directory as an indented tree (directories end with `/`, '
                                        'symlinks show their target), `depth` levels deep, at most 500 '
                                        'entries. `.git` is skipped and dependency/cache folders such as '
                                        'node_modules are not expanded. Use it to get oriented; use glob to '
                                        'find files by name and search_files to find text.',
                         'parameters': {'properties': {'path': {'default': '.',
                                                                'description': 'Directory to list, relative '
                                                                               'to the workspace.',
                                                                'type': 'string'},
                                                       'depth': {'default': 2,
                                                                 'description': 'How many levels deep to go '
                                                                                '(1 = only its entries).',
                                                                 'maximum': 10,
                                                                 'minimum': 1,
                                                                 'type': 'integer'}},
                                        'type': 'object'}},
 'listing.GlobTool': {'name': 'glob',
                      'kind': 'read',
                      'description': 'Find files whose path matches a glob pattern, relative to `path`. `*` '
                                     'and `?` stay within one directory, `**/` matches any number of '
                                     'directories (so `*.py` matches only the top level and `**/*.py` every '
                                     'Python file), `{a,b}` gives alternatives. Files ignored by .gitignore '
                                     'are left out. Newest first, at most 200 paths.',
                      'parameters': {'properties': {'pattern': {'description': 'Glob such as `**/*.py`, '
                                                                               '`src/*.ts` or '
                                                                               '`**/test_*.{py,txt}`.',
                                                                'type': 'string'},
                                                    'path': {'default': '.',
                                                             'description': 'Directory the pattern is '
                                                                            'relative to (default: the '
                                                                            'workspace).',
                                                             'type': 'string'}},
                                     'required': ['pattern'],
                                     'type': 'object'}},
 'search.SearchFilesTool': {'name': 'search_files',
                            'kind': 'read',
                            'description': 'Search file contents for a regular expression and list matching '
                                           'lines as `path:line:text`. Searches `path` (default: the whole '
                                           'workspace), skipping files ignored by .gitignore and binary '
                                           'files; `glob` narrows the files (`*.py` matches by name '
                                           'anywhere). Use it to find definitions, usages and strings before '
                                           'reading files. Returns at most max_results (default 100) lines.',
                            'parameters': {'properties': {'pattern': {'description': 'Regular expression to '
                                                                                     'look for in each line.',
                                                                      'type': 'string'},
                                                          'path': {'default': '.',
                                                                   'description': 'File or directory to '
                                                                                  'search (default: the '
                                                                                  'workspace).',
                                                                   'type': 'string'},
                                                          'glob': {'anyOf': [{'type': 'string'},
                                                                             {'type': 'null'}],
                                                                   'default': None,
                                                                   'description': 'Only files matching this '
                                                                                  'glob, e.g. `*.py` or '
                                                                                  '`src/**/*.ts`.'},
                                                          'case_insensitive': {'default': False,
                                                                               'description': 'Ignore letter '
                                                                                              'case.',
                                                                               'type': 'boolean'},
                                                          'max_results': {'default': 100,
                                                                          'description': 'Most matching '
                                                                                         'lines to return.',
                                                                          'maximum': 2000,
                                                                          'minimum': 1,
                                                                          'type': 'integer'}},
                                           'required': ['pattern'],
                                           'type': 'object'}},
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
                        'parameters': {'properties': {'command': {'description': 'Shell command line, run '
                                                                                 'with bash -c in the '
                                                                                 'workspace.',
                                                                  'type': 'string'},
                                                      'timeout_seconds': {'anyOf': [{'exclusiveMinimum': 0,
                                                                                     'type': 'number'},
                                                                                    {'type': 'null'}],
                                                                          'default': None,
                                                                          'description': 'Kill the command '
                                                                                         'after this many '
                                                                                         'seconds (default '
                                                                                         '120).'}},
                                       'required': ['command'],
                                       'type': 'object'}},
 'web.WebFetchTool': {'name': 'web_fetch',
                      'kind': 'read',
                      'description': 'Download a web page or file over http(s) and return it as text: HTML '
                                     'is turned into readable text (scripts and styles dropped, link targets '
                                     'kept in parentheses), other text types are returned as is, binary '
                                     'content is refused. Use it to read documentation, issues or API '
                                     'responses the task needs.',
                      'parameters': {'properties': {'url': {'description': 'Full http:// or https:// URL.',
                                                            'type': 'string'},
                                                    'max_bytes': {'default': 1000000,
                                                                  'description': 'Most bytes of the body to '
                                                                                 'download.',
                                                                  'maximum': 20000000,
                                                                  'minimum': 1,
                                                                  'type': 'integer'}},
                                     'required': ['url'],
                                     'type': 'object'}},
 'todo.TodoWriteTool': {'name': 'todo_write',
                        'kind': 'other',
                        'description': 'Keep a task list for work with several steps: send the whole list '
                                       "each time, with each item's status (pending, in_progress, "
                                       'completed). Mark an item in_progress before starting it and '
                                       'completed as soon as it is done. The user sees the list. Skip it for '
                                       'simple one-step tasks.',
                        'parameters': {'properties': {'todos': {'description': 'The complete task list; it '
                                                                               'replaces the previous one.',
                                                                'items': {'properties': {'content': {'description': 'What '
                                                                                                                    'to '
                                                                                                                    'do, '
                                                                                                                    'as '
                                                                                                                    'a '
                                                                                                                    'short '
                                                                                                                    'imperative '
                                                                                                                    'sentence.',
                                                                                                     'minLength': 1,
                                                                                                     'type': 'string'},
                                                                                         'status': {'default': 'pending',
                                                                                                    'description': 'pending, '
                                                                                                                   'in_progress '
                                                                                                                   '(one '
                                                                                                                   'at '
                                                                                                                   'a '
                                                                                                                   'time) '
                                                                                                                   'or '
                                                                                                                   'completed.',
                                                                                                    'enum': ['pending',
                                                                                                             'in_progress',
                                                                                                             'completed'],
                                                                                                    'type': 'string'}},
                                                                          'required': ['content'],
                                                                          'type': 'object'},
                                                                'type': 'array'}},
                                       'required': ['todos'],
                                       'type': 'object'}},
 'memory.RememberTool': {'name': 'remember',
                         'kind': 'other',
                         'description': 'Save a fact about this workspace for future sessions (build and '
                                        'test commands, conventions, where things are, user preferences). '
                                        'Saving under an existing key replaces its value. Use recall to read '
                                        'facts back.',
                         'parameters': {'properties': {'key': {'description': 'Short name for the fact, e.g. '
                                                                              '`test command`.',
                                                               'minLength': 1,
                                                               'type': 'string'},
                                                       'value': {'description': 'The fact to keep.',
                                                                 'type': 'string'}},
                                        'required': ['key', 'value'],
                                        'type': 'object'}},
 'memory.RecallTool': {'name': 'recall',
                       'kind': 'read',
                       'description': 'Read facts saved with remember in earlier sessions of this workspace: '
                                      'all of them, or those whose key or value contains `query` '
                                      '(case-insensitive).',
                       'parameters': {'properties': {'query': {'anyOf': [{'type': 'string'},
                                                                         {'type': 'null'}],
                                                               'default': None,
                                                               'description': 'Text to look for in keys and '
                                                                              'values; omit to list '
                                                                              'everything.'}},
                                      'type': 'object'}}}
