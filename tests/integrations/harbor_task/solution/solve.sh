#!/bin/bash
echo "hello harbor" > /app/hello.txt
