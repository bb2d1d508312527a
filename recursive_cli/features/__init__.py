"""features"""
